import { describe, expect, it } from '@jest/globals';
import type { ReportRepository, RunControlRepository } from '@app/run-store';
import type { NotificationListener, OutboxEnqueuer, OutboxRow } from '@app/outbox';
import { RUNS_READY_CHANNEL } from '@app/outbox';
import type { RunEntity } from '@app/persistence';
import type { CoordinatorConfig } from '../config/coordinator.config';
import { ResultWaits } from '../hand-off/result-waits.service';
import { RunLifecycle } from '../hand-off/run-lifecycle.service';
import { WaitingClaims } from '../hand-off/waiting-claims.service';
import type { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import type { RunsRepository } from './runs.repository';
import { InputSchemas } from '../workflows/input-schemas.service';
import { RunsService } from './runs.service';

/**
 * RunsService, with the RunLifecycle it tells, over stand-ins: the start statement returns the runs as inserted, due now or at `runAt`;
 * handed to a claim (running at revision 1) when it is given one, unless `refuseHandOff` (as when a
 * control is active); `failStart` makes it fail. With `publisher`, the coordinator has an outbox enqueuer,
 * and the statement takes the outbox row of each run it leaves queued and due now (its id: `o-<run id>`).
 */
function service({ refuseHandOff = false, failStart = false, publisher = false } = {}) {
  const woken: [string, string, number][] = [];
  const handedTo: (string | undefined)[] = [];
  const publishing: boolean[] = [];
  const published: OutboxRow[][] = [];
  const control = {
    start: async (
      runs: { id: string; workflow: string; version: string; runAt: Date | null }[],
      _on: unknown,
      claim: { workerId: string } | undefined,
      publish: boolean,
    ) => {
      const worker = claim?.workerId;
      handedTo.push(worker);
      publishing.push(publish);
      if (failStart) throw new Error('connection terminated');
      const handed = worker !== undefined && !refuseHandOff;
      return new Map(
        runs.map((run) => {
          const entity = {
            ...run,
            queue: `${run.workflow}:${run.version}`,
            status: handed ? 'running' : 'queued',
            revision: handed ? 1 : 0,
            attempt: 1,
            dueAt: run.runAt ?? new Date(Date.now() - 1),
            createdAt: new Date(),
            updatedAt: new Date(),
            paused: false,
            outboxId: publish && !handed && !run.runAt ? `o-${run.id}` : null,
          };
          return [run.id, entity as unknown as RunEntity & { paused: boolean }];
        }),
      );
    },
  };
  const repository = { pausedQueues: async () => new Set<string>(), findByIdempotencyKeys: async () => new Map() };
  const listener = { wake: (channel: string, payload: string, max: number) => woken.push([channel, payload, max]) };
  const metrics = { runsStarted: { inc: () => undefined }, handedOff: () => undefined };
  const released: [string, number][] = [];
  const reports = {
    release: async (id: string, revision: number) => {
      released.push([id, revision]);
      return { revision: revision + 1 };
    },
  };
  const waiting = new WaitingClaims();
  const resultWaits = new ResultWaits();
  const lifecycle = new RunLifecycle(
    waiting,
    resultWaits,
    listener as unknown as NotificationListener,
    metrics as unknown as CoordinatorMetrics,
    reports as unknown as ReportRepository,
    { claimMinIdleTimeMs: 90_000 } as CoordinatorConfig,
    publisher ? ({ publishTaken: async (rows: OutboxRow[]) => void published.push(rows) } as unknown as OutboxEnqueuer) : undefined,
  );
  const runs = new RunsService(
    repository as unknown as RunsRepository,
    control as unknown as RunControlRepository,
    lifecycle,
    listener as unknown as NotificationListener,
    resultWaits,
    // Every version registered, without a schema: these tests are about what a start does once its input passed.
    new InputSchemas(async (versions) => versions.map((version) => ({ ...version, inputSchema: null }))),
  );
  return { runs, woken, waiting, handedTo, released, publishing, published };
}

describe('RunsService start', () => {
  it("wakes this coordinator's claims of the queues that got runs due now without waiting for the NOTIFY, and publishes nothing without a publisher", async () => {
    const { runs, woken, publishing } = service();
    await runs.startMany([
      { workflow: 'echo', version: '1', input: 1, priority: 0 },
      { workflow: 'echo', version: '1', input: 2, priority: 0 },
      { workflow: 'chain', version: '1', input: 3, priority: 0 },
      { workflow: 'later', version: '1', input: 4, priority: 0, runAt: new Date(Date.now() + 60_000) },
    ]);
    expect(woken).toEqual([
      [RUNS_READY_CHANNEL, 'echo:1', 2],
      [RUNS_READY_CHANNEL, 'chain:1', 1],
    ]);
    expect(publishing).toEqual([false]);
  });

  it('with a publisher, publishes at once the wake-ups the start statement took for the runs due now', async () => {
    const { runs, publishing, published } = service({ publisher: true });
    const started = await runs.startMany([
      { workflow: 'echo', version: '1', input: 1, priority: 0 },
      { workflow: 'chain', version: '1', input: 2, priority: 0 },
      { workflow: 'later', version: '1', input: 3, priority: 0, runAt: new Date(Date.now() + 60_000) },
    ]);
    expect(publishing).toEqual([true]);
    const [echo, chain] = started.map(({ run }) => run.id);
    expect(published).toEqual([
      [
        { id: `o-${echo}`, runId: echo, queue: 'echo:1', attemptCount: 1 },
        { id: `o-${chain}`, runId: chain, queue: 'chain:1', attemptCount: 1 },
      ],
    ]);
  });

  it('wakes nothing for runs that come due later', async () => {
    const { runs, woken } = service();
    await runs.startMany([{ workflow: 'later', version: '1', input: 1, priority: 0, runAt: new Date(Date.now() + 60_000) }]);
    expect(woken).toEqual([]);
  });
});

describe('RunsService start with a claim waiting for its queue', () => {
  const connected = () => false;

  it('hands the run to the claim that has waited longest, which gets it as a claim would return it', async () => {
    const { runs, waiting, handedTo, woken } = service();
    const first = waiting.offer({ workerId: 'w-1' }, ['echo:1'], connected);
    const second = waiting.offer({ workerId: 'w-2' }, ['echo:1'], connected);
    const { run } = await runs.start({ workflow: 'echo', version: '1', input: { n: 1 }, priority: 0 });
    expect(handedTo).toEqual(['w-1']);
    expect(run.status).toBe('running');
    expect(await first.handed).toEqual({ id: run.id, workflow: 'echo', version: '1', queue: 'echo:1', revision: 1, attempt: 1, input: { n: 1 }, tasks: [] });
    expect(second.withdraw()).toBe(true); // still offered: the run went to one claim only
    expect(woken).toEqual([]); // a run handed over is not waiting: nothing else is woken for it
  });

  it('passes over claims whose worker disconnected, and claims of other queues', async () => {
    const { runs, waiting, handedTo } = service();
    waiting.offer({ workerId: 'w-gone' }, ['echo:1'], () => true);
    waiting.offer({ workerId: 'w-other' }, ['chain:1'], connected);
    const live = waiting.offer({ workerId: 'w-live' }, ['chain:1', 'echo:1'], connected);
    await runs.start({ workflow: 'echo', version: '1', input: 1, priority: 0 });
    expect(handedTo).toEqual(['w-live']);
    expect((await live.handed)?.queue).toBe('echo:1');
  });

  it('takes no claim for a run due later', async () => {
    const { runs, waiting, handedTo } = service();
    const offer = waiting.offer({ workerId: 'w-1' }, ['later:1'], connected);
    await runs.start({ workflow: 'later', version: '1', input: 1, priority: 0, runAt: new Date(Date.now() + 60_000) });
    expect(handedTo).toEqual([undefined]);
    expect(offer.withdraw()).toBe(true);
  });

  it('settles the claim with nothing when the run went in queued, and wakes claimers for it', async () => {
    const { runs, waiting, woken } = service({ refuseHandOff: true });
    const offer = waiting.offer({ workerId: 'w-1' }, ['echo:1'], connected);
    const { run } = await runs.start({ workflow: 'echo', version: '1', input: 1, priority: 0 });
    expect(run.status).toBe('queued');
    expect(await offer.handed).toBeUndefined();
    expect(woken).toEqual([[RUNS_READY_CHANNEL, 'echo:1', 1]]);
  });

  it('settles the claim with nothing when the start fails, and gives back a run it may have handed over', async () => {
    const { runs, waiting, released, handedTo } = service({ failStart: true });
    const offer = waiting.offer({ workerId: 'w-1' }, ['echo:1'], connected);
    await expect(runs.start({ workflow: 'echo', version: '1', input: 1, priority: 0 })).rejects.toThrow('connection terminated');
    expect(handedTo).toEqual(['w-1']);
    expect(offer.withdraw()).toBe(false); // taken: the claim awaits `handed`, which the failure settled
    expect(await offer.handed).toBeUndefined();
    // The statement may have committed before the connection died: the run, if handed, is released (fenced at revision 1).
    expect(released).toEqual([[expect.any(String), 1]]);
  });

  it('gives nothing back when a start without a waiting claim fails', async () => {
    const { runs, released } = service({ failStart: true });
    await expect(runs.start({ workflow: 'echo', version: '1', input: 1, priority: 0 })).rejects.toThrow('connection terminated');
    expect(released).toEqual([]);
  });

  it('hands nothing from a batch start', async () => {
    const { runs, waiting, handedTo } = service();
    const offer = waiting.offer({ workerId: 'w-1' }, ['echo:1'], connected);
    await runs.startMany([{ workflow: 'echo', version: '1', input: 1, priority: 0 }]);
    expect(handedTo).toEqual([undefined]);
    expect(offer.withdraw()).toBe(true);
  });
});
