import type { WorkerList, WorkerRegistration } from '@nest-durable/common';
import {
  countRunningSlots,
  Database,
  listWorkers,
  recordDeclaredInputSchemas,
  recordDeclaredUpdates,
  recordDeclaredWindows,
  upsertWorker,
  upsertWorkflowVersions,
  wakeWorkflowQueues,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { reconcileCodeLimits } from '../workflows/workflow-limits';
import { DeclaredSchedules } from '../schedules/declared-schedules.service';
import { InputSchemas } from '../workflows/input-schemas.service';

/**
 * The worker registry: who is alive and what each worker hosts. Workers register at start and then
 * every interval they name; a registration is also where what workflows declare in code reaches the
 * coordinators, in the same transaction (each step idempotent, and cheap when nothing changed: it
 * repeats every few seconds per worker).
 */
@Injectable()
export class WorkersService {
  constructor(
    private readonly db: Database,
    private readonly schedules: DeclaredSchedules,
    private readonly inputSchemas: InputSchemas,
  ) {}

  async register(workerId: string, registration: WorkerRegistration): Promise<void> {
    const remember = await this.db.transaction(async (tx) => {
      // The registry lists what a worker hosts; what its code declares lives in its own tables.
      const hosted = registration.workflows.map(({ name, version, shards }) => ({ name, version, shards }));
      // What its code declares, for the versions whose declarations it sent (absent: it does not say).
      const declared = registration.workflows.flatMap(({ name: workflow, version, schedules }) =>
        (schedules ?? []).map((schedule) => ({ workflow, version, name: schedule.name })),
      );
      await upsertWorker(tx, workerId, { ...registration, workflows: hosted }, declared);
      await upsertWorkflowVersions(tx, registration.workflows);
      // Limits declared in code: recorded when they changed (the running runs then count, waiting ones are woken).
      for (const { workflow, version } of await reconcileCodeLimits(tx, registration.workflows)) {
        await countRunningSlots(tx, workflow, version);
        await wakeWorkflowQueues(tx, workflow, version);
      }
      await recordDeclaredWindows(tx, registration.workflows);
      await recordDeclaredInputSchemas(tx, registration.workflows);
      await recordDeclaredUpdates(tx, registration.workflows);
      return this.schedules.reconcile(tx, registration.workflows);
    });
    remember();
    // This coordinator's starts check against what was just recorded; the others' within INPUT_SCHEMAS_FRESH_MS.
    this.inputSchemas.registered(registration.workflows);
  }

  async list(): Promise<WorkerList> {
    const rows = await listWorkers(this.db);
    return { items: rows.map((row) => ({ ...row, startedAt: row.startedAt.toISOString(), lastSeenAt: row.lastSeenAt.toISOString() })) };
  }
}
