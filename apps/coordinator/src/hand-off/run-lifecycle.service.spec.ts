import { describe, expect, it } from '@jest/globals';
import type { NewRun, ReportRepository, StartedRun } from '@app/run-store';
import { type NotificationListener, type OutboxEnqueuer, type OutboxRow, RUN_FINISHED_CHANNEL, RUNS_READY_CHANNEL } from '@app/outbox';
import type { RunEntity } from '@app/persistence';
import type { CoordinatorConfig } from '../config/coordinator.config';
import type { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import { ResultWaits } from './result-waits.service';
import { RunLifecycle } from './run-lifecycle.service';
import { WaitingClaims } from './waiting-claims.service';

const connected = () => false;

/**
 * RunLifecycle with a real WaitingClaims and ResultWaits, over stand-ins that write what they are asked to
 * `log` in the order asked: the listener (which wakes `listening` waits of a payload, calling `onWake` first),
 * the metrics, the report repository's release and, with `publisher`, the outbox enqueuer (whose publish fails
 * with `publishFails`).
 */
function lifecycle({ publisher = false, publishFails = false } = {}) {
  const log: string[] = [];
  const listening = new Map<string, number>();
  const hooks: { onWake?: () => void } = {};
  const listener = {
    wake: (channel: string, payload: string, max: number) => {
      hooks.onWake?.();
      log.push(`wake ${channel} ${payload} ${max}`);
      return Math.min(max, listening.get(payload) ?? 0);
    },
  };
  const counter = (name: string) => ({
    inc: (labels?: { workflow: string }, runs = 1) => void log.push([name, labels?.workflow, runs].filter((part) => part !== undefined).join(' ')),
  });
  const metrics = {
    handedOff: () => void log.push('handed off'),
    runsStarted: counter('started'),
    runsCompleted: counter('completed'),
    runsFailed: counter('failed'),
    runsCancelled: counter('cancelled'),
  };
  const reports = {
    release: async (runId: string, revision: number) => {
      log.push(`release ${runId} at ${revision}`);
      return { revision: revision + 1 };
    },
  };
  const outbox = {
    publishTaken: async (rows: OutboxRow[]) => {
      log.push(`publish ${rows.map((row) => `${row.id}/${row.queue}/${row.attemptCount}`).join(' ')}`);
      if (publishFails) throw new Error('Redis is down');
    },
  };
  const waiting = new WaitingClaims();
  const resultWaits = new ResultWaits();
  const events = new RunLifecycle(
    waiting,
    resultWaits,
    listener as unknown as NotificationListener,
    metrics as unknown as CoordinatorMetrics,
    reports as unknown as ReportRepository,
    { claimMinIdleTimeMs: 90_000, maxStalls: 3 } as CoordinatorConfig,
    publisher ? (outbox as unknown as OutboxEnqueuer) : undefined,
  );
  return { events, log, waiting, resultWaits, listening, hooks };
}

function newRun(id: string, workflow: string, runAt: Date | null = null): NewRun {
  return {
    id,
    workflow,
    version: '1',
    shard: null,
    input: { n: 1 },
    priority: 0,
    idempotencyKey: null,
    runAt,
    parentId: null,
    tags: {},
    traceparent: null,
    tracestate: null,
  };
}

/** A run as the start statement returns it: `running` at revision 1 when handed over. */
function startedRun(id: string, workflow: string, status: 'queued' | 'running', { dueAt = new Date(Date.now() - 1), outboxId = null as string | null } = {}) {
  const run = { id, workflow, version: '1', queue: `${workflow}:1`, status, revision: status === 'running' ? 1 : 0, attempt: 1, input: { n: 1 }, dueAt };
  return [id, { ...run, paused: false, outboxId } as unknown as StartedRun] as const;
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('RunLifecycle, a start', () => {
  it('takes for a run due now the claim waiting longest for its queue, whose worker is still there, and tells the statement of it', () => {
    const { events, waiting } = lifecycle();
    waiting.offer({ workerId: 'w-gone' }, ['echo:1'], () => true);
    waiting.offer({ workerId: 'w-1' }, ['chain:1', 'echo:1'], connected);
    waiting.offer({ workerId: 'w-2' }, ['echo:1'], connected);
    const handOff = events.handOffFor(newRun('r1', 'echo'));
    expect(handOff).toMatchObject({ workerId: 'w-1', queues: ['chain:1', 'echo:1'], claimMinIdleTimeMs: 90_000 });
    expect(handOff?.claim.workerId).toBe('w-1');
    expect(waiting.waiting('chain:1')).toBe(0); // taken from every queue it waited for
  });

  it('takes no claim for a run due later, nor when none waits for its queue', () => {
    const { events, waiting } = lifecycle();
    const offer = waiting.offer({ workerId: 'w-1' }, ['later:1'], connected);
    expect(events.handOffFor(newRun('r1', 'later', new Date(Date.now() + 60_000)))).toBeUndefined();
    expect(events.handOffFor(newRun('r2', 'other'))).toBeUndefined();
    expect(offer.withdraw()).toBe(true); // still offered
  });

  it('publishes its own wake-ups only with a publisher', () => {
    expect(lifecycle().events.startsPublish).toBe(false);
    expect(lifecycle({ publisher: true }).events.startsPublish).toBe(true);
  });

  it('that handed its run over: the claim answers with it, and only a turn later are the runs counted and the start answered', async () => {
    const { events, log, waiting } = lifecycle({ publisher: true });
    const offer = waiting.offer({ workerId: 'w-1' }, ['echo:1'], connected);
    const handOff = events.handOffFor(newRun('r1', 'echo'))!;
    void offer.handed.then((run) => log.push(`claim answered with ${run?.id} at revision ${run?.revision}`));
    const claimAnswers = events.started(new Map([startedRun('r1', 'echo', 'running')]), handOff);
    expect(claimAnswers).toBeInstanceOf(Promise);
    await claimAnswers;
    log.push('start answered');
    // Nothing to publish (a run handed over gets no outbox row) and no claim to wake: the run is not waiting.
    expect(log).toEqual(['handed off', 'claim answered with r1 at revision 1', 'started echo 1', 'start answered']);
    expect(await offer.handed).toEqual({ id: 'r1', workflow: 'echo', version: '1', queue: 'echo:1', revision: 1, attempt: 1, input: { n: 1 }, tasks: [] });
  });

  it('whose run went in queued: the claim is told nothing was handed; the taken wake-up is published, the run counted and a claim woken at once', async () => {
    const { events, log, waiting } = lifecycle({ publisher: true });
    const offer = waiting.offer({ workerId: 'w-1' }, ['echo:1'], connected);
    const handOff = events.handOffFor(newRun('r1', 'echo'))!;
    expect(events.started(new Map([startedRun('r1', 'echo', 'queued', { outboxId: 'o1' })]), handOff)).toBeUndefined();
    expect(log).toEqual(['publish o1/echo:1/1', 'started echo 1', `wake ${RUNS_READY_CHANNEL} echo:1 1`]);
    expect(await offer.handed).toBeUndefined();
  });

  it('of a batch: wakes as many claims of each queue as it got runs due now, and publishes every wake-up the statement took, in one call', () => {
    const { events, log } = lifecycle({ publisher: true });
    const later = new Date(Date.now() + 60_000);
    const runs = new Map([
      startedRun('a', 'echo', 'queued', { outboxId: 'o-a' }),
      startedRun('b', 'echo', 'queued', { outboxId: 'o-b' }),
      startedRun('c', 'chain', 'queued', { outboxId: 'o-c' }),
      startedRun('d', 'later', 'queued', { dueAt: later }),
    ]);
    expect(events.started(runs, undefined)).toBeUndefined();
    expect(log).toEqual([
      'publish o-a/echo:1/1 o-b/echo:1/1 o-c/chain:1/1',
      'started echo 1',
      'started echo 1',
      'started chain 1',
      'started later 1',
      `wake ${RUNS_READY_CHANNEL} echo:1 2`,
      `wake ${RUNS_READY_CHANNEL} chain:1 1`,
    ]);
  });

  it('publishes nothing without a publisher, and a publish that fails fails nothing (the outbox retries it)', async () => {
    const { events, log } = lifecycle();
    events.started(new Map([startedRun('a', 'echo', 'queued', { outboxId: 'o-a' })]), undefined);
    expect(log).toEqual(['started echo 1', `wake ${RUNS_READY_CHANNEL} echo:1 1`]);
    const failing = lifecycle({ publisher: true, publishFails: true });
    failing.events.started(new Map([startedRun('a', 'echo', 'queued', { outboxId: 'o-a' })]), undefined);
    await turn();
    expect(failing.log[0]).toBe('publish o-a/echo:1/1');
  });

  it('that failed after taking a claim: gives back the run it may have handed over (fenced at revision 1), then settles the claim with nothing', async () => {
    const { events, log, waiting } = lifecycle();
    const offer = waiting.offer({ workerId: 'w-1' }, ['echo:1'], connected);
    const run = newRun('r1', 'echo');
    const handOff = events.handOffFor(run)!;
    void offer.handed.then((handed) => log.push(`claim answered with ${handed}`));
    events.startFailed(run, handOff);
    await turn();
    expect(log).toEqual(['release r1 at 1', 'claim answered with undefined']);
  });

  it('that failed without a claim gives nothing back', () => {
    const { events, log } = lifecycle();
    events.startFailed(newRun('r1', 'echo'), undefined);
    expect(log).toEqual([]);
  });

  it('inside a larger transaction (a schedule firing) is counted only: its NOTIFY and the enqueue trigger announce it', () => {
    const { events, log } = lifecycle({ publisher: true });
    events.startedInTransaction('nightly', 3);
    expect(log).toEqual(['started nightly 3']);
  });
});

describe('RunLifecycle, runs that came due', () => {
  it('wakes as many claims of each queue as runs came due', () => {
    const { events, log } = lifecycle();
    events.becameReady(
      new Map([
        ['echo:1', 2],
        ['chain:1', 1],
      ]),
    );
    expect(log).toEqual([`wake ${RUNS_READY_CHANNEL} echo:1 2`, `wake ${RUNS_READY_CHANNEL} chain:1 1`]);
  });
});

describe('RunLifecycle, runs that ended', () => {
  const ended = (id: string, status: 'completed' | 'failed') => ({ run: { id, status } as RunEntity, hasSteps: false });

  it("a report's finish hands the run to the waits armed here before the result long-polls are woken, counts it, and says how many waits it ended", () => {
    const { events, log, resultWaits, listening, hooks } = lifecycle();
    const armed = resultWaits.arm('r1');
    const finishing = events.finishing(['r1']);
    expect(finishing.returnsRun('r1', true)).toBe(true); // a wait is armed: the statement returns the run
    const run = ended('r1', 'completed');
    hooks.onWake = () => log.push(`wait handed the run: ${armed.finished === run}, told it ended: ${armed.ended}`);
    // Besides the wait armed here, one long-poll the listener wakes.
    listening.set('r1', 1);
    const woken = events.finished({ runId: 'r1', status: 'completed', workflow: 'echo', run }, finishing);
    finishing.end();
    expect(woken).toBe(2);
    expect(log).toEqual(['completed echo 1', 'wait handed the run: true, told it ended: true', `wake ${RUN_FINISHED_CHANNEL} r1 Infinity`]);
  });

  it('a failed run is counted as failed; without a wait here nothing is handed and none is counted as ended', () => {
    const { events, log } = lifecycle();
    const finishing = events.finishing(['r1']);
    expect(events.finished({ runId: 'r1', status: 'failed', workflow: 'echo' }, finishing)).toBe(0);
    finishing.end();
    expect(log).toEqual(['failed echo 1', `wake ${RUN_FINISHED_CHANNEL} r1 Infinity`]);
  });

  it('runs a claim failed for stalls and cancels are counted only (their statements NOTIFY)', () => {
    const { events, log } = lifecycle();
    events.failedForStalls([
      { id: 'r1', workflow: 'echo' },
      { id: 'r2', workflow: 'chain' },
    ]);
    events.cancelled();
    expect(log).toEqual(['failed echo 1', 'failed chain 1', 'cancelled 1']);
  });
});
