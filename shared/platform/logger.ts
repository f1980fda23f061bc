import { Logger } from '@aws-lambda-powertools/logger';

/** Structured JSON logs; the level comes from POWERTOOLS_LOG_LEVEL (or LOG_LEVEL), INFO by default. */
export const logger = new Logger({ serviceName: 'agent-platform' });
