import type { JsonValue } from '@nest-durable/common';
import { defineWorkflow } from '@nest-durable/workflow';

/** Returns its input. */
export const echoWorkflow = defineWorkflow<JsonValue, JsonValue>({
  name: 'echo',
  version: '1',
  handler: async (_ctx, input) => input,
});
