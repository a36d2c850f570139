import { ListRunsQuery } from '@app/contracts';
import { RunEntity, TaskEntity } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { FindOptionsWhere, In, LessThan, Repository } from 'typeorm';

/** Reads of runs for the client API (every state change goes through libs/locking). */
@Injectable()
export class RunsRepository {
  constructor(
    @InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>,
    @InjectRepository(TaskEntity) private readonly tasks: Repository<TaskEntity>,
  ) {}

  /** The runs a start just inserted (by id) and the existing ones its idempotency keys matched. */
  async findForStart(
    ids: string[],
    keys: { workflow: string; idempotencyKey: string }[],
  ): Promise<{ byId: Map<string, RunEntity>; byKey: Map<string, RunEntity> }> {
    const where = [...(ids.length > 0 ? [{ id: In(ids) }] : []), ...keys];
    const runs = where.length > 0 ? await this.runs.find({ where }) : [];
    return {
      byId: new Map(runs.map((run) => [run.id, run])),
      byKey: new Map(runs.filter((run) => run.idempotencyKey !== null).map((run) => [`${run.workflow}\u0000${run.idempotencyKey}`, run])),
    };
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
