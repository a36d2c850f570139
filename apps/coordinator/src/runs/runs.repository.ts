import { ListRunsQuery, type RunStatus } from '@nest-durable/common';
import { RUN_COLUMNS } from '@app/run-store';
import { Database, prepared, RunEntity, type TaskEntity, uuidv7Floor } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { And, FindOptionsWhere, LessThan, MoreThanOrEqual, Raw, Repository } from 'typeorm';

const RUN_BY_ID = prepared('wf_run_by_id', `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1`);

/** A run's steps in the order they were made (found through tasks_pkey: run_id, key). */
const TASKS_OF_RUN = prepared(
  'wf_tasks_of_run',
  `SELECT run_id AS "runId", key, kind, seq, name, status, attempts, output, error, wake_at AS "wakeAt", child_id AS "childId",
          created_at AS "createdAt", started_at AS "startedAt", finished_at AS "finishedAt"
     FROM tasks WHERE run_id = $1 ORDER BY seq, created_at`,
);

/** Reads of runs for the client API (every state change goes through libs/locking). */
@Injectable()
export class RunsRepository {
  constructor(
    @InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>,
    private readonly db: Database,
  ) {}

  /** Of the queues of these runs that wait (queued or waiting), those paused now (their version, or their shard of it). */
  async pausedQueues(runs: Pick<RunEntity, 'queue' | 'status'>[]): Promise<Set<string>> {
    const queues = runs.filter((run) => run.status === 'queued' || run.status === 'waiting').map((run) => run.queue);
    if (queues.length === 0) return new Set();
    const rows = await this.db.query<{ queue: string }>(
      `SELECT q.queue FROM unnest($1::text[]) AS q(queue)
         JOIN workflow_controls c ON c.workflow = split_part(q.queue, ':', 1) AND c.version = split_part(q.queue, ':', 2)
        WHERE c.paused OR nullif(split_part(q.queue, ':', 3), '') = ANY (c.paused_shards)`,
      [[...new Set(queues)]],
    );
    return new Set(rows.map((row) => row.queue));
  }

  /** Existing runs by idempotency key (a start that matched them), keyed `${workflow}\u0000${key}`. */
  async findByIdempotencyKeys(keys: { workflow: string; idempotencyKey: string }[]): Promise<Map<string, RunEntity>> {
    const runs = keys.length > 0 ? await this.runs.find({ where: keys }) : [];
    return new Map(runs.map((run) => [`${run.workflow}\u0000${run.idempotencyKey}`, run]));
  }

  // The run view's two reads are plain prepared statements, not the ORM's: they are on the path of every
  // result a client waits for, and the ORM's query building cost more CPU than the statements themselves.

  async findById(id: string): Promise<RunEntity | null> {
    const [run] = await this.db.query<RunEntity>(RUN_BY_ID, [id]);
    return run ?? null;
  }

  findTasks(runId: string): Promise<TaskEntity[]> {
    return this.db.query<TaskEntity>(TASKS_OF_RUN, [runId]);
  }

  /**
   * Newest first; ids are time-ordered (UUIDv7), so the cursor is the last id of the previous page and a
   * creation time range is a range of ids: both walk the primary key (or runs_workflow_id_idx with a workflow),
   * never a scan of created_at. An idempotency key comes with its workflow (runs_idempotency_key_idx). Tags are
   * matched with `@>` on runs_tags_idx, which holds only tagged runs (hence the `<> '{}'`, which lets
   * the planner use it).
   */
  list(query: ListRunsQuery): Promise<RunEntity[]> {
    const where: FindOptionsWhere<RunEntity> = {};
    if (query.workflow) where.workflow = query.workflow;
    if (query.version) where.version = query.version;
    if (query.status) where.status = query.status;
    if (query.idempotencyKey) where.idempotencyKey = query.idempotencyKey;
    const before = [query.cursor, query.createdBefore && uuidv7Floor(query.createdBefore.getTime())].filter((id): id is string => !!id).sort()[0];
    const bounds = [before && LessThan(before), query.createdAfter && MoreThanOrEqual(uuidv7Floor(query.createdAfter.getTime()))].filter((bound) => !!bound);
    if (bounds.length > 0) where.id = bounds.length === 1 ? bounds[0] : And(...bounds);
    if (query.tag) where.tags = Raw((tags) => `${tags} <> '{}' AND ${tags} @> :wanted::jsonb`, { wanted: JSON.stringify(query.tag) });
    return this.runs.find({ where, order: { id: 'DESC' }, take: query.limit });
  }

  /**
   * The first `limit` transitions of a run after the one with id `after`, oldest first (a range scan of
   * run_transitions_run_idx), or undefined if the run does not exist (checked only when there are no rows).
   * `t.id`, not `id`: ORDER BY would take the output column, the id as text, where '10' < '9'.
   */
  async findTransitions(runId: string, after: string, limit: number): Promise<TransitionRow[] | undefined> {
    const rows = await this.db.query<TransitionRow>(
      `SELECT id::text, from_status AS "from", to_status AS "to", revision, worker_id AS "workerId", created_at AS at
         FROM run_transitions t WHERE run_id = $1 AND t.id > $2::bigint ORDER BY t.id LIMIT $3`,
      [runId, after, limit],
    );
    if (rows.length === 0 && !(await this.runs.existsBy({ id: runId }))) return undefined;
    return rows;
  }
}

export interface TransitionRow {
  /** Its position, as text (a bigint). */
  id: string;
  from: RunStatus | null;
  to: RunStatus;
  revision: number;
  workerId: string | null;
  at: Date;
}
