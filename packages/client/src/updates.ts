import { API, DurableError, type JsonValue, UPDATE_WAIT_MS_MAX, UpdateFailedError, UpdateRefusedError, type UpdateView } from '@nest-durable/common';
import { isAnsweredError, type JsonHttpClient } from './json-http.client';

/** How long `update` waits for the run's answer, and what stops it. */
export interface UpdateOptions {
  /** Give up waiting after this long (rejecting with UpdatePendingError; the update stays sent); default 60 s, `Infinity` waits on. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * The update was sent and accepted, but the run did not answer within `timeoutMs` (it is busy in a task, or waits
 * for a worker): it will still be applied. `getUpdate(runId, name, updateId)` waits for its answer.
 */
export class UpdatePendingError extends DurableError {
  constructor(
    readonly runId: string,
    readonly updateId: string,
  ) {
    super('update_pending', `run ${runId} has not answered update ${updateId} yet; it stays sent (getUpdate waits for its answer)`);
  }
}

/**
 * Sends update `name` to run `runId` and waits for its answer (see WorkflowClient.update): the first request waits
 * on the coordinator up to its bound, then the update is long-polled until the deadline.
 */
export async function sendUpdate(http: JsonHttpClient, runId: string, name: string, input: JsonValue, options: UpdateOptions): Promise<JsonValue> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const waitMs = () => Math.max(0, Math.min(UPDATE_WAIT_MS_MAX, deadline - Date.now()));
  let view: UpdateView;
  try {
    view = await http.call(API.sendUpdate, { params: { id: runId, name }, body: { input, waitMs: waitMs() } }, { signal: options.signal });
  } catch (error) {
    throw withUpdate(error);
  }
  while (view.status === 'pending') {
    if (Date.now() >= deadline) throw new UpdatePendingError(runId, view.id);
    options.signal?.throwIfAborted();
    view = await http.call(API.getUpdate, { params: { id: runId, name, updateId: view.id }, query: { waitMs: waitMs() } }, { signal: options.signal });
  }
  return answerOf(view);
}

/** The handler's output, or the error its update was answered with. */
export function answerOf(view: UpdateView): JsonValue {
  if (view.status === 'completed') return view.output;
  if (view.status === 'refused') throw new UpdateRefusedError(view.runId, view.id);
  const failed = new UpdateFailedError(UpdateFailedError.reason, `update ${view.name} failed: ${view.error?.name ?? 'Error'}: ${view.error?.message ?? ''}`);
  failed.update = view;
  throw failed;
}

/** An update's 422 with the update it carries set on the error (UpdateFailedError.update). */
function withUpdate(error: unknown): unknown {
  if (error instanceof UpdateFailedError && isAnsweredError(error)) {
    (error as UpdateFailedError).update = (error.body as { update?: UpdateView } | undefined)?.update;
  }
  return error;
}
