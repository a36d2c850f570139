import { describe, expect, it } from '@jest/globals';
import type { Consumer, Reclaimed, Wakeup } from '@app/streams';
import type { ClaimedRun, StreamDeadLetterReport, TakeRunsRequest, TakeRunsResponse } from '@nest-durable/common';
import type { CoordinatorApi } from '../coordinator.api';
import type { WorkflowRegistry } from '../workflow.registry';
import { TransportSubscriber } from './transport.subscriber';

/** The signal of a worker that is not stopping. */
const running = new AbortController().signal;
const wakeup = (queue: string, name: string): Wakeup => ({ queue, name });

function run(id: string, queue: string, wakeup: string | undefined, revision = 1): ClaimedRun {
  return { id, workflow: queue.split(':')[0], version: '1', queue, revision, attempt: 1, input: null, tasks: [], ...(wakeup ? { wakeup } : {}) };
}

/** A consumer that hands out what it is given and records what the subscriber does with each wake-up. */
class FakeConsumer implements Consumer {
  reclaimable: Reclaimed<Wakeup>[] = [];
  arriving: Wakeup[] = [];
  readonly calls: string[] = [];
  readonly settled: Record<'ack' | 'giveBack' | 'restore' | 'touch', string[]> = { ack: [], giveBack: [], restore: [], touch: [] };
  holding: string[] = [];
  readSignal: AbortSignal | undefined;
  failGiveBack = false;

  async attend<T>(call: () => Promise<T>): Promise<T> {
    this.calls.push('attend');
    try {
      return await call();
    } finally {
      this.calls.push('attended');
    }
  }

  async reclaim(max: number, holding: Iterable<Wakeup>): Promise<Reclaimed<Wakeup>[]> {
    this.calls.push('reclaim');
    this.holding = [...holding].map((held) => held.name);
    return this.reclaimable.splice(0, max);
  }

  async read(max: number, signal: AbortSignal): Promise<Wakeup[]> {
    this.calls.push(`read ${max}`);
    this.readSignal = signal;
    return this.arriving.splice(0, max);
  }

  ack = this.record('ack');
  giveBack = this.record('giveBack');
  restore = this.record('restore');
  touch = this.record('touch');

  async probe(): Promise<void> {}

  async close(): Promise<void> {
    this.calls.push('close');
  }

  private record(what: 'ack' | 'giveBack' | 'restore' | 'touch') {
    return async (wakeups: Wakeup[]) => {
      if (what === 'giveBack' && this.failGiveBack) throw new Error('Redis went away');
      this.calls.push(what);
      this.settled[what].push(...wakeups.map(({ queue, name }) => `${queue} ${name}`));
    };
  }
}

/** A coordinator whose take answers as `answer` says (from the request), recording takes and dead letters. */
function subscriber(answer: (request: TakeRunsRequest['workflows']) => TakeRunsResponse | Promise<TakeRunsResponse>, maxDeliveries = 5) {
  const consumer = new FakeConsumer();
  const takes: TakeRunsRequest['workflows'][] = [];
  const deadLetters: Omit<StreamDeadLetterReport, 'workerId'>[] = [];
  let refuseDeadLetters = false;
  const api = {
    take: async (workflows: TakeRunsRequest['workflows']) => {
      takes.push(workflows);
      consumer.calls.push('take');
      return answer(workflows);
    },
    reportDeadLetter: async (report: Omit<StreamDeadLetterReport, 'workerId'>) => {
      if (refuseDeadLetters) throw new Error('coordinator unreachable');
      deadLetters.push(report);
      return { deadLetterId: '1', runFailed: false };
    },
  };
  const registry = {
    refs: () => [
      { name: 'echo', version: '1' },
      { name: 'chain', version: '1', shard: 'eu' },
    ],
  };
  const transport = new TransportSubscriber('redis-test', consumer, api as unknown as CoordinatorApi, registry as unknown as WorkflowRegistry, maxDeliveries);
  return { transport, consumer, takes, deadLetters, refuse: () => (refuseDeadLetters = true) };
}

const nothing = (): TakeRunsResponse => ({ runs: [], requeue: [] });

describe('TransportSubscriber: taking runs for wake-ups', () => {
  it('takes per queue, for its workflow version and shard, one run per wake-up read, within one call of the consumer', async () => {
    const { transport, consumer, takes } = subscriber(() => ({ runs: [run('a', 'echo:1', 'e1'), run('b', 'chain:1:eu', 'c1')], requeue: [] }));
    consumer.arriving = [wakeup('echo:1', 'e1'), wakeup('chain:1:eu', 'c1'), wakeup('echo:1', 'e2')];
    const runs = await transport.getReadyRuns(4, running);
    expect(runs.map((taken) => taken.id)).toEqual(['a', 'b']);
    expect(takes).toEqual([
      [
        { name: 'echo', version: '1', wakeups: ['e1', 'e2'] },
        { name: 'chain', version: '1', shard: 'eu', wakeups: ['c1'] },
      ],
    ]);
    // The take and the settling happen inside the consumer's call: what arrives meanwhile waits for the worker.
    expect(consumer.calls).toEqual(['attend', 'reclaim', 'read 4', 'take', 'giveBack', 'ack', 'attended']);
    expect(consumer.readSignal).toBe(running);
  });

  it('takes nothing, and asks the coordinator nothing, when no wake-up came', async () => {
    const { transport, takes } = subscriber(nothing);
    expect(await transport.getReadyRuns(4, running)).toEqual([]);
    expect(takes).toEqual([]);
  });

  it('gives back what the coordinator hands back, acknowledges the stale rest and counts it', async () => {
    const { transport, consumer } = subscriber(() => ({ runs: [run('a', 'echo:1', 'e1')], requeue: [{ queue: 'echo:1', wakeup: 'e2' }] }));
    consumer.arriving = [wakeup('echo:1', 'e1'), wakeup('echo:1', 'e2'), wakeup('echo:1', 'e3'), wakeup('chain:1:eu', 'e1')];
    await transport.getReadyRuns(4, running);
    expect(consumer.settled.giveBack).toEqual(['echo:1 e2']);
    expect(consumer.settled.ack).toEqual(['echo:1 e3', 'chain:1:eu e1']);
    expect(transport.stale).toBe(2);
  });

  it('names a wake-up found twice once', async () => {
    const { transport, consumer, takes } = subscriber(nothing);
    consumer.arriving = [wakeup('echo:1', 'e1'), wakeup('echo:1', 'e1')];
    await transport.getReadyRuns(4, running);
    expect(takes).toEqual([[{ name: 'echo', version: '1', wakeups: ['e1'] }]]);
    expect(consumer.settled.ack).toEqual(['echo:1 e1']);
  });

  it('restores every wake-up when the take fails, and throws', async () => {
    const { transport, consumer } = subscriber(() => Promise.reject(new Error('coordinator unreachable')));
    consumer.arriving = [wakeup('echo:1', 'e1'), wakeup('echo:1', 'e2')];
    await expect(transport.getReadyRuns(4, running)).rejects.toThrow('coordinator unreachable');
    expect(consumer.settled.restore).toEqual(['echo:1 e1', 'echo:1 e2']);
    expect(consumer.settled.ack).toEqual([]);
  });

  it('returns the runs taken when giving back after the take fails: they are this worker’s now', async () => {
    const { transport, consumer } = subscriber(() => ({ runs: [run('a', 'echo:1', 'e1')], requeue: [{ queue: 'echo:1', wakeup: 'e2' }] }));
    consumer.arriving = [wakeup('echo:1', 'e1'), wakeup('echo:1', 'e2')];
    consumer.failGiveBack = true;
    expect((await transport.getReadyRuns(4, running)).map((taken) => taken.id)).toEqual(['a']);
  });
});

describe('TransportSubscriber: the wake-up behind each run taken', () => {
  it('is touched on heartbeat and acknowledged when that taking of the run ends, not another', async () => {
    const { transport, consumer } = subscriber(() => ({ runs: [run('a', 'echo:1', 'e1', 3)], requeue: [] }));
    consumer.arriving = [wakeup('echo:1', 'e1')];
    await transport.getReadyRuns(4, running);
    expect(consumer.settled.ack).toEqual([]);
    await transport.heartbeat('a', 3);
    await transport.heartbeat('a', 2);
    expect(consumer.settled.touch).toEqual(['echo:1 e1']);
    await transport.acknowledge('a', 2);
    expect(consumer.settled.ack).toEqual([]);
    await transport.acknowledge('a', 3);
    await transport.acknowledge('a', 3);
    expect(consumer.settled.ack).toEqual(['echo:1 e1']);
  });

  it('is what the worker holds when the consumer reclaims, until it is acknowledged', async () => {
    const { transport, consumer } = subscriber(() => ({ runs: [run('a', 'echo:1', 'e1')], requeue: [] }));
    consumer.arriving = [wakeup('echo:1', 'e1')];
    await transport.getReadyRuns(4, running);
    await transport.getReadyRuns(3, running);
    expect(consumer.holding).toEqual(['e1']);
    await transport.acknowledge('a', 1);
    await transport.getReadyRuns(4, running);
    expect(consumer.holding).toEqual([]);
  });
});

describe('TransportSubscriber: reclaimed wake-ups', () => {
  it('are taken with what is at hand, read for the free slots left without waiting', async () => {
    const { transport, consumer, takes } = subscriber(nothing);
    consumer.reclaimable = [{ wakeup: wakeup('echo:1', 'old'), deliveries: 2 }];
    consumer.arriving = [wakeup('echo:1', 'new')];
    await transport.getReadyRuns(4, running);
    expect(consumer.calls).toContain('read 3');
    expect(consumer.readSignal?.aborted).toBe(true);
    expect(takes).toEqual([[{ name: 'echo', version: '1', wakeups: ['old', 'new'] }]]);
  });

  it('go to the coordinator as dead letters past maxDeliveries, then are acknowledged and counted', async () => {
    const { transport, consumer, takes, deadLetters } = subscriber(nothing, 5);
    consumer.reclaimable = [
      { wakeup: wakeup('echo:1', 'at-limit'), deliveries: 5 },
      { wakeup: wakeup('chain:1:eu', 'past'), deliveries: 6, runId: '0190b1c2-0000-7000-8000-000000000001' },
    ];
    await transport.getReadyRuns(4, running);
    expect(deadLetters).toEqual([
      { workflow: { name: 'chain', version: '1', shard: 'eu' }, wakeup: 'past', runId: '0190b1c2-0000-7000-8000-000000000001', deliveries: 6 },
    ]);
    expect(transport.deadLettered).toBe(1);
    expect(consumer.settled.ack).toEqual(['chain:1:eu past', 'echo:1 at-limit']);
    expect(takes).toEqual([[{ name: 'echo', version: '1', wakeups: ['at-limit'] }]]);
  });

  it('that the coordinator could not record as dead letters are restored, neither taken nor acknowledged', async () => {
    const { transport, consumer, takes, refuse } = subscriber(nothing, 5);
    refuse();
    consumer.reclaimable = [{ wakeup: wakeup('echo:1', 'past'), deliveries: 9 }];
    await transport.getReadyRuns(4, running);
    expect(consumer.settled.restore).toEqual(['echo:1 past']);
    expect(consumer.settled.ack).toEqual([]);
    expect(transport.deadLettered).toBe(0);
    expect(takes).toEqual([]);
    // None was kept, so the read may wait for new ones.
    expect(consumer.readSignal).toBe(running);
  });
});

describe('TransportSubscriber: closing', () => {
  it('closes its consumer', async () => {
    const { transport, consumer } = subscriber(nothing);
    await transport.close();
    expect(consumer.calls).toEqual(['close']);
  });
});
