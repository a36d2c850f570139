import { ListRunsQuery } from '@nest-durable/client';
import { RunEntity, TaskEntity } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { FindOptionsWhere, LessThan, Raw, Repository } from 'typeorm';

/** Reads of runs for the client API (every state change goes through libs/locking). */
@Injectable()
export class RunsRepository {
  constructor(
    @InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>,
    @InjectRepository(TaskEntity) private readonly tasks: Repository<TaskEntity>,
  ) {}

  /** Existing runs by idempotency key (a start that matched them), keyed `${workflow}\u0000${key}`. */
  async findByIdempotencyKeys(keys: { workflow: string; idempotencyKey: string }[]): Promise<Map<string, RunEntity>> {
    const runs = keys.length > 0 ? await this.runs.find({ where: keys }) : [];
    return new Map(runs.map((run) => [`${run.workflow}\u0000${run.idempotencyKey}`, run]));
  }

  findById(id: string): Promise<RunEntity | null> {
    return this.runs.findOneBy({ id });
  }

  findTasks(runId: string): Promise<TaskEntity[]> {
    return this.tasks.find({ where: { runId }, order: { seq: 'ASC', createdAt: 'ASC' } });
  }

  /**
   * Newest first; ids are time-ordered, so the cursor is the last id of the previous page. Tags are
   * matched with `@>` on runs_tags_idx, which holds only tagged runs (hence the `<> '{}'`, which lets
   * the planner use it).
   */
  list(query: ListRunsQuery): Promise<RunEntity[]> {
    const where: FindOptionsWhere<RunEntity> = {};
    if (query.workflow) where.workflow = query.workflow;
    if (query.status) where.status = query.status;
    if (query.cursor) where.id = LessThan(query.cursor);
    if (query.tag) where.tags = Raw((tags) => `${tags} <> '{}' AND ${tags} @> :wanted::jsonb`, { wanted: JSON.stringify(query.tag) });
    return this.runs.find({ where, order: { id: 'DESC' }, take: query.limit });
  }
}
