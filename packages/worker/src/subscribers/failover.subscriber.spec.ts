import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import type { ClaimedRun } from '@nest-durable/common';
import { FailoverSubscriber, FIRST_PROBE_DELAY_MS, PROBE_TIMEOUT_MS } from './failover.subscriber';
import type { HttpSubscriber } from './http.subscriber';
import type { Subscriber } from './subscriber.interface';

/** The signal of a worker that is not stopping. */
const running = new AbortController().signal;

function run(id: string): ClaimedRun {
  return { id, workflow: 'echo', version: '1', queue: 'echo:1', revision: 1, attempt: 1, input: null, tasks: [] };
}

/** A primary that fails until told otherwise, and whose probes settle only when the test says so. */
class FakePrimary implements Subscriber {
  readonly name = 'redis-zset';
  down = true;
  readonly probes: { succeed(): void }[] = [];

  async getReadyRuns(): Promise<ClaimedRun[]> {
    if (this.down) throw new Error('Redis not reachable');
    return [run('from-primary')];
  }

  getNextDelay(): number {
    return 0;
  }

  probe(): Promise<void> {
    return new Promise((resolve) => this.probes.push({ succeed: resolve }));
  }
}

/** An HTTP backup whose claims answer at once. */
function backup(): HttpSubscriber {
  return { name: 'http', claim: async () => [run('from-backup')] } as unknown as HttpSubscriber;
}

/** Whether `promise` settled once the microtasks queued so far ran (no timer fires: they are fake). */
async function settledNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await jest.advanceTimersByTimeAsync(0);
  return settled;
}

describe('FailoverSubscriber: probing the primary from the HTTP backup', () => {
  let primary: FakePrimary;
  let failover: FailoverSubscriber;

  beforeEach(async () => {
    jest.useFakeTimers();
    primary = new FakePrimary();
    failover = new FailoverSubscriber(primary, backup(), 60_000);
    // The primary fails: this claim and the next go to the backup, and the first probe is due in FIRST_PROBE_DELAY_MS.
    expect((await failover.getReadyRuns(10, running)).map((claimed) => claimed.id)).toEqual(['from-backup']);
    expect(failover.usingBackup).toBe(true);
    await jest.advanceTimersByTimeAsync(FIRST_PROBE_DELAY_MS);
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it("returns the backup's claims at once while a probe of the primary has not answered, and takes from the primary again once a probe succeeds", async () => {
    const claim = failover.getReadyRuns(10, running);
    expect(primary.probes).toHaveLength(1);
    expect(await settledNow(claim)).toBe(true);
    expect((await claim).map((claimed) => claimed.id)).toEqual(['from-backup']);
    expect(failover.usingBackup).toBe(true);

    primary.down = false;
    primary.probes[0].succeed();
    await jest.advanceTimersByTimeAsync(0);
    expect(failover.usingBackup).toBe(false);
    expect((await failover.getReadyRuns(10, running)).map((claimed) => claimed.id)).toEqual(['from-primary']);
  });

  it('abandons a probe that never settles after PROBE_TIMEOUT_MS, so a later probe can bring the primary back', async () => {
    await failover.getReadyRuns(10, running);
    expect(primary.probes).toHaveLength(1);
    // One probe at a time: while the first is pending (and its successor due), none other starts.
    await jest.advanceTimersByTimeAsync(PROBE_TIMEOUT_MS - 1);
    await failover.getReadyRuns(10, running);
    expect(primary.probes).toHaveLength(1);

    await jest.advanceTimersByTimeAsync(1);
    await failover.getReadyRuns(10, running);
    expect(primary.probes).toHaveLength(2);
    primary.down = false;
    primary.probes[1].succeed();
    await jest.advanceTimersByTimeAsync(0);
    expect(failover.usingBackup).toBe(false);
    expect((await failover.getReadyRuns(10, running)).map((claimed) => claimed.id)).toEqual(['from-primary']);
  });
});
