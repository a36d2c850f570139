import {
  isTerminalStatus,
  ListRunsQuery,
  parseRunId,
  RunAlreadyTerminalError,
  RunNotFoundError,
  RunPage,
  RunView,
  StartRunRequest,
} from '@app/contracts';
import { NotificationListener, RUN_FINISHED_CHANNEL } from '@app/outbox';
import { RunEntity, uuidv7 } from '@app/persistence';
import { queueName } from '@app/streams';
import { Injectable } from '@nestjs/common';
import { RunsRepository } from './runs.repository';
import { toRunView } from './run-view';

@Injectable()
export class RunsService {
  constructor(
    private readonly repository: RunsRepository,
    private readonly listener: NotificationListener,
  ) {}

  /** Starts a run; with a known idempotency key returns the existing run (`created: false`). */
  async start(request: StartRunRequest): Promise<{ run: RunView; created: boolean }> {
    const inserted = await this.repository.insert(uuidv7(), queueName(request.workflow, request.version), request);
    if (inserted) return { run: toRunView(inserted), created: true };
    const existing = await this.repository.findByIdempotencyKey(request.workflow, request.idempotencyKey!);
    return { run: toRunView(existing!), created: false };
  }

  async get(id: string): Promise<RunView> {
    const run = await this.require(id);
    return toRunView(run, await this.repository.findTasks(run.id));
  }

  async list(query: ListRunsQuery): Promise<RunPage> {
    const afterId = query.cursor === undefined ? undefined : parseRunId(query.cursor, 'cursor');
    const runs = await this.repository.list({ ...query, limit: query.limit + 1, afterId });
    const page = runs.slice(0, query.limit);
    return {
      runs: page.map((run) => toRunView(run)),
      nextCursor: runs.length > query.limit ? page[page.length - 1].id : null,
    };
  }

  /**
   * Returns the run once it is terminal, or as it is after `waitMs`. Woken by the NOTIFY its final
   * transition sends; the wait is armed before the read so a transition in between is not missed.
   */
  async waitForResult(id: string, waitMs: number): Promise<RunView> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const remaining = deadline - Date.now();
      const wait = remaining > 0 ? this.listener.waitFor(RUN_FINISHED_CHANNEL, (payload) => payload === id, remaining) : undefined;
      const run = await this.require(id).catch((error: unknown) => {
        wait?.cancel();
        throw error;
      });
      if (!wait || isTerminalStatus(run.status) || this.listener.isClosed) {
        wait?.cancel();
        return toRunView(run, await this.repository.findTasks(run.id));
      }
      await wait.notified;
    }
  }

  async cancel(id: string): Promise<RunView> {
    const { previous, cancelled } = await this.repository.cancel(id);
    if (!previous) throw new RunNotFoundError(id);
    if (!cancelled) throw new RunAlreadyTerminalError(id, previous);
    return this.get(id);
  }

  private async require(id: string): Promise<RunEntity> {
    const run = await this.repository.findById(id);
    if (!run) throw new RunNotFoundError(id);
    return run;
  }
}
