import type { PauseRequest, WorkflowLimits, WorkflowList, WorkflowView } from '@nest-durable/common';
import { Database, findWorkflowControl, listWorkflowControls, pauseWorkflow, resumeWorkflow, type SqlExecutor, wakeWorkflowQueues } from '@app/persistence';
import { Injectable, Logger } from '@nestjs/common';
import { replaceApiLimits } from './workflow-limits';
import { toWorkflowView } from './workflow-view';

/** Pausing, resuming and limiting workflow versions (enforced by the claim statement, in every dispatch mode). */
@Injectable()
export class WorkflowsService {
  private readonly logger = new Logger(WorkflowsService.name);

  constructor(private readonly db: Database) {}

  async list(): Promise<WorkflowList> {
    const rows = await listWorkflowControls(this.db);
    return { items: rows.map((row) => toWorkflowView(row, row.name, row.version)) };
  }

  /** Runs of the version (or shard) already running finish; queued ones wait; starts are still accepted. */
  pause(name: string, version: string, { shard }: PauseRequest): Promise<WorkflowView> {
    return this.change(name, version, 'paused', { shard }, (tx) => pauseWorkflow(tx, name, version, shard));
  }

  /** Its waiting runs are woken at once (a NOTIFY for claimers, new wake-ups for Redis workers). */
  resume(name: string, version: string, { shard }: PauseRequest): Promise<WorkflowView> {
    return this.change(name, version, 'resumed', { shard }, async (tx) => {
      await resumeWorkflow(tx, name, version, shard);
      await wakeWorkflowQueues(tx, name, version);
    });
  }

  /** Replaces the limits set through the API; each one set wins over the code's until cleared. */
  setLimits(name: string, version: string, limits: WorkflowLimits): Promise<WorkflowView> {
    return this.change(name, version, 'limits set', { limits }, async (tx) => {
      await replaceApiLimits(tx, name, version, limits);
      await wakeWorkflowQueues(tx, name, version);
    });
  }

  /** The code's limits (if any) apply again. */
  clearLimits(name: string, version: string): Promise<WorkflowView> {
    return this.setLimits(name, version, {});
  }

  /** One transaction: the change, its wake-ups and the view after it. */
  private async change(name: string, version: string, what: string, detail: object, apply: (tx: SqlExecutor) => Promise<void>): Promise<WorkflowView> {
    const view = await this.db.transaction(async (tx) => {
      await apply(tx);
      return toWorkflowView(await findWorkflowControl(tx, name, version), name, version);
    });
    this.logger.log(`workflow ${what}`, { workflow: name, version, ...detail });
    return view;
  }
}
