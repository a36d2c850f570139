import { ListRunsQuery } from '@app/contracts';
import { RunEntity, TaskEntity } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { FindOptionsWhere, LessThan, Repository } from 'typeorm';

/** Reads of runs for the client API (every state change goes through libs/locking). */
@Injectable()
export class RunsRepository {
  constructor(
    @InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>,
    @InjectRepository(TaskEntity) private readonly tasks: Repository<TaskEntity>,
  ) {}

  findByIdempotencyKey(workflow: string, idempotencyKey: string): Promise<RunEntity | null> {
    return this.runs.findOneBy({ workflow, idempotencyKey });
  }

  findById(id: string): Promise<RunEntity | null> {
    return this.runs.findOneBy({ id });
  }

  findTasks(runId: string): Promise<TaskEntity[]> {
    return this.tasks.find({ where: { runId }, order: { seq: 'ASC', createdAt: 'ASC' } });
  }

  /** Newest first; ids are time-ordered, so the cursor is the last id of the previous page. */
  list(query: ListRunsQuery & { afterId?: string }): Promise<RunEntity[]> {
    const where: FindOptionsWhere<RunEntity> = {};
    if (query.workflow) where.workflow = query.workflow;
    if (query.status) where.status = query.status;
    if (query.afterId) where.id = LessThan(query.afterId);
    return this.runs.find({ where, order: { id: 'DESC' }, take: query.limit });
  }
}
