import { describe, expect, it } from '@jest/globals';
import type { FinishedRun } from '@app/locking';
import type { RunEntity } from '@app/persistence';
import { ResultWaits } from './result-waits.service';

const ended = (id: string): FinishedRun => ({ run: { id, status: 'completed' } as RunEntity, hasSteps: false });

describe('ResultWaits', () => {
  it('hands an ended run to the waits armed for it when it ended, not to later ones nor to other runs', () => {
    const waits = new ResultWaits();
    const first = waits.arm('a');
    const second = waits.arm('a');
    const other = waits.arm('b');
    const run = ended('a');
    waits.hand(run);
    const later = waits.arm('a');
    expect([first.finished, second.finished, other.finished, later.finished]).toEqual([run, run, undefined, undefined]);
  });

  it('says a run is awaited while one of its waits is armed', () => {
    const waits = new ResultWaits();
    expect(waits.isAwaited('a')).toBe(false);
    const first = waits.arm('a');
    const second = waits.arm('a');
    first.release();
    expect(waits.isAwaited('a')).toBe(true);
    second.release();
    second.release();
    expect(waits.isAwaited('a')).toBe(false);
    waits.hand(ended('a'));
    expect(second.finished).toBeUndefined();
  });

  it("keeps a wait's settled() pending while a request here may be ending its run, and marks only awaited runs", async () => {
    const waits = new ResultWaits();
    const wait = waits.arm('a');
    const unawaited = waits.finishing(['b']);
    const first = waits.finishing(['a', 'b']);
    const second = waits.finishing(['a']);
    const later = waits.arm('b');
    let settled = false;
    void wait.settled().then(() => (settled = true));
    await expect(later.settled()).resolves.toBeUndefined(); // b was not awaited when its requests began
    first.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    second.end();
    second.end();
    unawaited.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(true);
  });
});
