import { ListRunsQuery, RunStatus, StartRunRequest } from '@app/contracts';
import { json } from '@app/locking';
import { RUN_FINISHED_CHANNEL, RUNS_READY_CHANNEL } from '@app/outbox';
import { Database, RunEntity, TaskEntity } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { FindOptionsWhere, LessThan, Repository } from 'typeorm';
import { RUN_COLUMNS } from './run-view';

@Injectable()
export class RunsRepository {
  constructor(
    private readonly db: Database,
    @InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>,
    @InjectRepository(TaskEntity) private readonly tasks: Repository<TaskEntity>,
  ) {}

  /**
   * Inserts a queued run and its first transition in one statement, and wakes idle claimers
   * of its queue if it is already due (NOTIFY is delivered at commit). With an idempotency key
   * that already exists for the workflow, nothing is inserted and `undefined` is returned; a
   * concurrent insert of the same key waits for the other to commit, so exactly one run exists.
   */
  async insert(id: string, queue: string, request: StartRunRequest): Promise<RunEntity | undefined> {
    const [row] = await this.db.query<RunEntity>(
      `WITH inserted AS (
         INSERT INTO runs (id, workflow, version, queue, status, input, priority, idempotency_key, due_at)
         VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, coalesce($8, now()))
         ON CONFLICT (workflow, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
         RETURNING *
       ), history AS (
         INSERT INTO run_transitions (run_id, from_status, to_status, revision)
         SELECT id, NULL, 'queued', revision FROM inserted
       )
       SELECT ${RUN_COLUMNS}, CASE WHEN due_at <= now() THEN pg_notify('${RUNS_READY_CHANNEL}', queue) END
         FROM inserted`,
      [
        id,
        request.workflow,
        request.version,
        queue,
        json(request.input),
        request.priority,
        request.idempotencyKey ?? null,
        request.runAt ?? null,
      ],
    );
    return row;
  }

  findByIdempotencyKey(workflow: string, idempotencyKey: string): Promise<RunEntity | null> {
    return this.runs.findOneBy({ workflow, idempotencyKey });
  }

  findById(id: string): Promise<RunEntity | null> {
    return this.runs.findOneBy({ id });
  }

  findTasks(runId: string): Promise<TaskEntity[]> {
    return this.tasks.find({ where: { runId }, order: { createdAt: 'ASC', key: 'ASC' } });
  }

  /** Newest first; ids are time-ordered, so the cursor is the last id of the previous page. */
  list(query: ListRunsQuery & { afterId?: string }): Promise<RunEntity[]> {
    const where: FindOptionsWhere<RunEntity> = {};
    if (query.workflow) where.workflow = query.workflow;
    if (query.status) where.status = query.status;
    if (query.afterId) where.id = LessThan(query.afterId);
    return this.runs.find({ where, order: { id: 'DESC' }, take: query.limit });
  }

  /**
   * Cancels a run that is not terminal. The row is locked first, so the status reported is the
   * one the update acted on; bumping the revision fences off the worker running it, whose next
   * write gets 409. Returns the status before (undefined if the run does not exist) and whether
   * this call cancelled it.
   */
  async cancel(id: string): Promise<{ previous?: RunStatus; cancelled: boolean }> {
    const [row] = await this.db.query<{ previous: RunStatus; cancelled: boolean }>(
      `WITH target AS (
         SELECT id, status FROM runs WHERE id = $1 FOR UPDATE
       ), cancelled AS (
         UPDATE runs r
            SET status = 'cancelled', revision = r.revision + 1, heartbeat_at = NULL,
                finished_at = now(), updated_at = now()
           FROM target t
          WHERE r.id = t.id AND t.status IN ('queued', 'running')
         RETURNING r.id, r.revision, t.status AS from_status
       ), history AS (
         INSERT INTO run_transitions (run_id, from_status, to_status, revision)
         SELECT id, from_status, 'cancelled', revision FROM cancelled
       )
       SELECT t.status AS previous,
              (SELECT count(*) FROM (SELECT pg_notify('${RUN_FINISHED_CHANNEL}', id::text) FROM cancelled) n) > 0 AS cancelled
         FROM target t`,
      [id],
    );
    return row ?? { cancelled: false };
  }
}
