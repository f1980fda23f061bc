import { CreateScheduleCommand, SchedulerClient } from '@aws-sdk/client-scheduler';
import type { CallBackstop } from './ports.ts';
import { queueMessageBody } from '../platform/queue/queue-message.ts';
import { traceAwsClient } from '../platform/tracing.ts';

/**
 * The backstop of each call: an EventBridge Scheduler one-time schedule (`at(…)`, deleted after it fires) whose
 * target is the call-backstop queue. Locally `endpoint` is the Scheduler stand-in of `npm start`.
 */
export function schedulerBackstop(options: { queueArn: string; roleArn: string; region: string; endpoint?: string | undefined }): CallBackstop {
  const client = traceAwsClient(
    new SchedulerClient({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    }),
  );
  return {
    async schedule(call, at) {
      await client.send(
        new CreateScheduleCommand({
          // One schedule per call: a retried start cannot make a second one.
          Name: `call-${call.sessionId}`,
          ScheduleExpression: `at(${at.toISOString().slice(0, 19)})`,
          ScheduleExpressionTimezone: 'UTC',
          FlexibleTimeWindow: { Mode: 'OFF' },
          ActionAfterCompletion: 'DELETE',
          Target: { Arn: options.queueArn, RoleArn: options.roleArn, Input: queueMessageBody({ kind: 'call.backstop', ...call }) },
        }),
      );
    },
  };
}
