import type { ListRunsQuery, RunStatus } from '@nest-durable/common';
import {
  countMatchingRuns,
  Database,
  listRuns,
  matchingRunIds,
  pausedQueues,
  queryRun,
  type QueryRow,
  type RunEntity,
  runById,
  runExists,
  type RunFilterValues,
  runsByIdempotencyKeys,
  runValues,
  type TaskEntity,
  tasksOfRun,
  type TransitionRow,
  transitionsAfter,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';

/** Reads of runs for the client API (libs/persistence/src/sql/runs-list.sql.ts; every state change goes through the run store). */
@Injectable()
export class RunsRepository {
  constructor(private readonly db: Database) {}

  /** Of the queues of these runs that wait (queued or waiting), those paused now (their version, or their shard of it). */
  async pausedQueues(runs: Pick<RunEntity, 'queue' | 'status'>[]): Promise<Set<string>> {
    const queues = runs.filter((run) => run.status === 'queued' || run.status === 'waiting').map((run) => run.queue);
    if (queues.length === 0) return new Set();
    return new Set(await pausedQueues(this.db, [...new Set(queues)]));
  }

  /** Existing runs by idempotency key (a start that matched them), keyed `${workflow}\u0000${key}`. */
  async findByIdempotencyKeys(keys: { workflow: string; idempotencyKey: string }[]): Promise<Map<string, RunEntity>> {
    const runs = keys.length > 0 ? await runsByIdempotencyKeys(this.db, keys) : [];
    return new Map(runs.map((run) => [`${run.workflow}\u0000${run.idempotencyKey}`, run]));
  }

  async findById(id: string): Promise<RunEntity | null> {
    return (await runById(this.db, id)) ?? null;
  }

  findTasks(runId: string): Promise<TaskEntity[]> {
    return tasksOfRun(this.db, runId);
  }

  /** What the run recorded under a query's name; undefined when there is no such run. */
  query(runId: string, name: string): Promise<QueryRow | undefined> {
    return queryRun(this.db, runId, name);
  }

  /** The values the run exposed, by name; undefined when there is no such run. */
  values(runId: string): Promise<{ name: string; value: unknown; updatedAt: Date }[] | undefined> {
    return runValues(this.db, runId);
  }

  list(query: ListRunsQuery): Promise<RunEntity[]> {
    return listRuns(this.db, query);
  }

  /** Up to `limit` ids of runs the filter matches in one of `statuses`, newest first (see run-selection.sql.ts). */
  matchingIds(filter: RunFilterValues, statuses: RunStatus[], limit: number): Promise<string[]> {
    return matchingRunIds(this.db, filter, statuses, limit);
  }

  /** How many runs the filter matches in one of `statuses`, counted up to `max`. */
  countMatching(filter: RunFilterValues, statuses: RunStatus[], max: number): Promise<number> {
    return countMatchingRuns(this.db, filter, statuses, max);
  }

  /** The first `limit` transitions of a run after the one with id `after`, or undefined if the run does not exist (checked only when there are no rows). */
  async findTransitions(runId: string, after: string, limit: number): Promise<TransitionRow[] | undefined> {
    const rows = await transitionsAfter(this.db, runId, after, limit);
    if (rows.length === 0 && !(await runExists(this.db, runId))) return undefined;
    return rows;
  }
}
