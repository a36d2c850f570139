import { describe, expect, it } from '@jest/globals';
import type { RunControlRepository } from '@app/locking';
import { OUTBOX_CHANNEL, type NotificationListener, RUNS_READY_CHANNEL } from '@app/outbox';
import type { RunEntity } from '@app/persistence';
import type { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import type { RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';

/** RunsService over stand-ins: the start statement returns the runs as inserted, due now or at `runAt`. */
function service() {
  const woken: [string, string, number][] = [];
  const control = {
    start: async (runs: { id: string; workflow: string; version: string; runAt: Date | null }[]) =>
      new Map(
        runs.map((run) => {
          const entity = {
            ...run,
            queue: `${run.workflow}:${run.version}`,
            status: 'queued',
            dueAt: run.runAt ?? new Date(Date.now() - 1),
            createdAt: new Date(),
            updatedAt: new Date(),
            paused: false,
          };
          return [run.id, entity as unknown as RunEntity & { paused: boolean }];
        }),
      ),
  };
  const repository = { pausedQueues: async () => new Set<string>(), findByIdempotencyKeys: async () => new Map() };
  const listener = { wake: (channel: string, payload: string, max: number) => woken.push([channel, payload, max]) };
  const metrics = { runsStarted: { inc: () => undefined } };
  const runs = new RunsService(
    repository as unknown as RunsRepository,
    control as unknown as RunControlRepository,
    listener as unknown as NotificationListener,
    metrics as unknown as CoordinatorMetrics,
  );
  return { runs, woken };
}

describe('RunsService start', () => {
  it("wakes this coordinator's claims of the queues that got runs due now, and its outbox publisher, without waiting for the NOTIFY", async () => {
    const { runs, woken } = service();
    await runs.startMany([
      { workflow: 'echo', version: '1', input: 1, priority: 0 },
      { workflow: 'echo', version: '1', input: 2, priority: 0 },
      { workflow: 'chain', version: '1', input: 3, priority: 0 },
      { workflow: 'later', version: '1', input: 4, priority: 0, runAt: new Date(Date.now() + 60_000) },
    ]);
    expect(woken).toEqual([
      [RUNS_READY_CHANNEL, 'echo:1', 2],
      [RUNS_READY_CHANNEL, 'chain:1', 1],
      [OUTBOX_CHANNEL, '', 1],
    ]);
  });

  it('wakes nothing for runs that come due later', async () => {
    const { runs, woken } = service();
    await runs.startMany([{ workflow: 'later', version: '1', input: 1, priority: 0, runAt: new Date(Date.now() + 60_000) }]);
    expect(woken).toEqual([]);
  });
});
