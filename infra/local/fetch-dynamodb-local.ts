/** `npm install` hook: fetch DynamoDB Local now so that `npm start` and `npm test` need no network later. */
import { ensureDynamoDbLocal } from './dynamodb-local.ts';

try {
  console.log(`DynamoDB Local ready: ${ensureDynamoDbLocal()}`);
} catch (error) {
  // Not fatal here: the first start tries again and says clearly what is missing.
  console.warn(`Could not fetch DynamoDB Local now (${(error as Error).message}); npm start will retry.`);
}
