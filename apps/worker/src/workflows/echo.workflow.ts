import type { JsonValue } from '@app/contracts';
import { defineWorkflow } from '@app/sdk';

/** Returns its input. */
export const echoWorkflow = defineWorkflow<JsonValue, JsonValue>({
  name: 'echo',
  version: '1',
  handler: async (_ctx, input) => input,
});
