import type { DeclaredSchedule, RegisteredWorkflow } from '@nest-durable/common';
import { databaseNow, deleteUndeclaredSchedules, type SqlExecutor, upsertDeclaredSchedule, uuidv7 } from '@app/persistence';
import { checkDeclaredSchedules } from '@nest-durable/common';
import { Injectable } from '@nestjs/common';
import { scheduleFields } from './schedules.service';

/** A declaration this coordinator reconciled is read again from the database after this long at the latest. */
const RECHECK_MS = 60_000;

/**
 * Schedules declared in code (`defineWorkflow({ schedules })`), reconciled when workers register: the
 * code is their truth. A schedule is identified by its workflow, version and name; one that no online
 * worker of its version declares any more is deleted (its runs stay); a pause through the API survives. Each
 * coordinator remembers the declarations it reconciled, so a registration repeating them (every few
 * seconds per worker) costs no statement; it checks the database again once a minute at the latest.
 */
@Injectable()
export class DeclaredSchedules {
  private readonly reconciled = new Map<string, { declaration: string; at: number }>();

  /**
   * Brings the declared schedules of these workflow versions in line with the registration, in its
   * transaction; a bad declaration refuses the registration (400 with the reason, nothing stored).
   * Returns what to remember once that transaction committed.
   */
  async reconcile(tx: SqlExecutor, workflows: RegisteredWorkflow[]): Promise<() => void> {
    const applied: [string, string][] = [];
    const now = Date.now();
    for (const workflow of workflows) {
      // A worker that does not say what its code declares leaves the schedules alone.
      if (workflow.schedules === undefined) continue;
      const declared = workflow.schedules as DeclaredSchedule[];
      const key = `${workflow.name}\u0000${workflow.version}`;
      const declaration = JSON.stringify(declared);
      const known = this.reconciled.get(key);
      if (known?.declaration === declaration && now - known.at < RECHECK_MS) continue;
      await this.apply(tx, workflow.name, workflow.version, declared);
      applied.push([key, declaration]);
    }
    return () => {
      for (const [key, declaration] of applied) this.reconciled.set(key, { declaration, at: now });
    };
  }

  private async apply(tx: SqlExecutor, workflow: string, version: string, declared: DeclaredSchedule[]): Promise<void> {
    const dbNow = declared.length > 0 ? await databaseNow(tx) : 0;
    for (const { schedule, times } of checkDeclaredSchedules(workflow, version, declared, dbNow)) {
      const nextFire = new Date(times.next(dbNow));
      await upsertDeclaredSchedule(
        tx,
        {
          ...scheduleFields(schedule),
          id: uuidv7(),
          workflow,
          version,
          name: schedule.name,
          paused: schedule.paused,
          nextRunAt: schedule.paused ? null : nextFire,
        },
        nextFire,
      );
    }
    await deleteUndeclaredSchedules(
      tx,
      workflow,
      version,
      declared.map((schedule) => schedule.name),
    );
  }
}
