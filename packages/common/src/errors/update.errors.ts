import { DurableError } from './durable.error';

/** The coordinator's refusals of an update (POST /v1/runs/:id/updates/:name), and its answer when the handler threw. */

/** The run's workflow version declares no update of that name (as its workers registered it): nothing was sent. */
export class UpdateNotDeclaredError extends DurableError {
  static readonly reason = 'update_not_declared';

  constructor(workflow: string, version: string, name: string, declared: readonly string[]) {
    const known = declared.length === 0 ? 'none registered' : `registered: ${declared.join(', ')}`;
    super(UpdateNotDeclaredError.reason, `workflow ${workflow} ${version} declares no update "${name}" (${known})`);
  }
}

export class UpdateNotFoundError extends DurableError {
  static readonly reason = 'update_not_found';

  constructor(runId: string, updateId: string) {
    super(UpdateNotFoundError.reason, `run ${runId} has no update ${updateId}`);
  }
}

/** The run ended (completed, failed, cancelled) before it applied the update: it never will. */
export class UpdateRefusedError extends DurableError {
  static readonly reason = 'update_refused';

  constructor(runId: string, updateId: string) {
    super(UpdateRefusedError.reason, `run ${runId} ended before it applied update ${updateId}; the update was not applied`);
  }
}

/**
 * The run applied the update and its handler threw (answered 422 with the update, whose `error` says what was
 * thrown). The run goes on: a failed update is recorded in its history and fails nothing else.
 */
export class UpdateFailedError extends DurableError {
  static readonly reason = 'update_failed';
  /** The update as answered (a client sets it from the answer): `error` is what the handler threw. */
  update?: { id: string; runId: string; name: string; error: { name: string; message: string; stack?: string } | null };
}
