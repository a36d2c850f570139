import { decode, MAX_DELAY_MS, parseIdentifier, Tags, type WorkflowName, type WorkflowTarget, workflowNameOf } from '@nest-durable/common';
import { type ChildOptions, InvalidStepError } from '@nest-durable/workflow';

/*
 * The checks a step's arguments get before the step is taken: a run's execution and a replay of its history
 * (replayHistories) make the same, so code that a run would fail at a step fails its replay there too.
 */

/** A durable wait's length in ms. */
export function checkDelay(ms: number, what: string): number {
  if (!Number.isInteger(ms) || ms < 0 || ms > MAX_DELAY_MS) throw new InvalidStepError(`${what} must be an integer from 0 to ${MAX_DELAY_MS} ms`);
  return ms;
}

/** A timeout in ms: like a delay, but at least 1 (a token that expires as it is made could never be completed). */
export function checkTimeout(ms: number, what: string): number {
  if (!Number.isInteger(ms) || ms < 1 || ms > MAX_DELAY_MS) throw new InvalidStepError(`${what} must be an integer from 1 to ${MAX_DELAY_MS} ms`);
  return ms;
}

/** A child's options, and the workflow version it starts. */
export function checkChild(target: WorkflowTarget, { shard, tags }: ChildOptions): WorkflowName {
  if (shard !== undefined && shard !== null) parseIdentifier(shard, 'shard');
  if (tags !== undefined) decode(Tags, tags, 'tags');
  return workflowNameOf(target);
}
