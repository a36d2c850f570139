import {
  compileInputCheck,
  type InputCheck,
  InvalidRequestError,
  isTerminalStatus,
  type JsonValue,
  type RecordUpdatesRequest,
  RunAlreadyTerminalError,
  RunNotFoundError,
  UpdateNotDeclaredError,
  UpdateNotFoundError,
  UpdateRefusedError,
  type UpdateView,
} from '@nest-durable/common';
import { NotificationListener, RUN_FINISHED_CHANNEL } from '@app/outbox';
import { Database, findDeclaredUpdates, runById, UPDATE_ANSWERED_CHANNEL, uuidv7 } from '@app/persistence';
import { UpdateRepository, type UpdateRow } from '@app/run-store';
import { Injectable, Logger } from '@nestjs/common';

/** Compiled input checks kept, by schema (as JSON); past this many the cache starts over. */
const CHECKS_KEPT = 1_000;

/**
 * Updates (docs/architecture.md, "Updates"): a client's send, checked against what the run's version declares and
 * accepted in arrival order; the wait for the run's answer; a worker's record of the updates it applied.
 */
@Injectable()
export class UpdatesService {
  private readonly logger = new Logger(UpdatesService.name);
  private readonly checks = new Map<string, InputCheck | undefined>();

  constructor(
    private readonly db: Database,
    private readonly updates: UpdateRepository,
    private readonly listener: NotificationListener,
  ) {}

  /**
   * Sends update `name` to run `runId` once its input matches the schema the run's version declares for it (404
   * `update_not_declared`, 400 `invalid_input`, 409 `run_terminal`: nothing is sent), then waits up to `waitMs` for
   * the run's answer: the update as it is then (pending when the wait ran out).
   */
  async send(runId: string, name: string, input: JsonValue, waitMs: number): Promise<UpdateView> {
    const run = await runById(this.db, runId);
    if (!run) throw new RunNotFoundError(runId);
    if (isTerminalStatus(run.status)) throw new RunAlreadyTerminalError(runId, run.status);
    const declared = await findDeclaredUpdates(this.db, run.workflow, run.version);
    const update = declared.find((entry) => entry.name === name);
    if (!update)
      throw new UpdateNotDeclaredError(
        run.workflow,
        run.version,
        name,
        declared.map((entry) => entry.name),
      );
    if (update.inputSchema !== undefined) {
      const mismatch = this.checkOf(update.inputSchema)?.firstMismatch(input);
      if (mismatch) throw new InvalidRequestError('invalid_input', `update ${name}: ${mismatch}`);
    }
    const id = uuidv7();
    await this.updates.send({ id, runId, name, input });
    const answered = await this.answer(runId, id, waitMs);
    if (answered.status === 'refused') throw new UpdateRefusedError(runId, id);
    return answered;
  }

  /** The update as it is, or once answered within `waitMs` (404 `update_not_found`, also for one of another name). */
  async get(runId: string, name: string, id: string, waitMs: number): Promise<UpdateView> {
    const update = await this.read(runId, id);
    if (update.name !== name) throw new UpdateNotFoundError(runId, id);
    return this.answer(runId, id, waitMs);
  }

  /** Records the answers of the worker holding the run (409 once it no longer does). */
  record(runId: string, request: RecordUpdatesRequest): Promise<void> {
    return this.updates.record(runId, request);
  }

  /**
   * The update once it is answered, or as it is after `waitMs`. Woken by its answer's NOTIFY, or by its run's end
   * (which refuses it: no worker can apply it any more); both waits are armed before the reads, so an answer or an
   * end committed in between is not missed.
   */
  private async answer(runId: string, id: string, waitMs: number): Promise<UpdateView> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const remaining = deadline - Date.now();
      const waits =
        remaining > 0 && !this.listener.isClosed
          ? [
              this.listener.waitFor(UPDATE_ANSWERED_CHANNEL, (payload) => payload === id, remaining),
              this.listener.waitFor(RUN_FINISHED_CHANNEL, (payload) => payload === runId, remaining),
            ]
          : [];
      try {
        let update = await this.read(runId, id);
        if (update.status === 'pending') {
          const run = await runById(this.db, runId);
          if (run && isTerminalStatus(run.status)) {
            await this.updates.refusePending(runId);
            update = await this.read(runId, id);
          }
        }
        if (update.status !== 'pending' || waits.length === 0) return toUpdateView(update);
        await Promise.race(waits.map((wait) => wait.notified));
      } finally {
        for (const wait of waits) wait.cancel();
      }
    }
  }

  private async read(runId: string, id: string): Promise<UpdateRow> {
    const update = await this.updates.find(runId, id);
    if (update) return update;
    throw (await runById(this.db, runId)) ? new UpdateNotFoundError(runId, id) : new RunNotFoundError(runId);
  }

  /** The check of a declared schema; none for one this coordinator cannot read (registered through a newer one), as for starts. */
  private checkOf(schema: unknown): InputCheck | undefined {
    const key = JSON.stringify(schema);
    if (this.checks.has(key)) return this.checks.get(key);
    if (this.checks.size >= CHECKS_KEPT) this.checks.clear();
    let check: InputCheck | undefined;
    try {
      check = compileInputCheck(schema);
    } catch (error) {
      this.logger.warn(`an update's registered input schema cannot be read here; its inputs are not checked: ${(error as Error).message}`);
    }
    this.checks.set(key, check);
    return check;
  }
}

export function toUpdateView(row: UpdateRow): UpdateView {
  return {
    id: row.id,
    runId: row.runId,
    name: row.name,
    status: row.status,
    input: row.input,
    output: row.output,
    error: row.error,
    createdAt: row.createdAt.toISOString(),
    answeredAt: row.answeredAt ? row.answeredAt.toISOString() : null,
  };
}
