import { describe, expect, it } from '@jest/globals';
import type { FinishedRun } from '@app/run-store';
import type { RunEntity } from '@app/persistence';
import { ResultWaits } from './result-waits.service';

const ended = (id: string, status: 'completed' | 'failed' = 'completed'): FinishedRun => ({ run: { id, status } as RunEntity, hasSteps: false });
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('ResultWaits', () => {
  it('hands a failed run its finish returned to the waits armed when the finish statement was made; later ones only learn it ended', () => {
    const waits = new ResultWaits();
    const finishing = waits.finishing(['a', 'b']);
    const first = waits.arm('a');
    const second = waits.arm('a');
    const other = waits.arm('c');
    expect(finishing.returnsRun('a', false)).toBe(true);
    expect(finishing.returnsRun('b', true)).toBe(false); // one of several runs, and no wait for it
    const later = waits.arm('a');
    const run = ended('a', 'failed');
    finishing.ended('a', run);
    finishing.end();
    expect([first.finished, second.finished, later.finished, other.finished]).toEqual([run, run, undefined, undefined]);
    expect([first.ended, second.ended, later.ended, other.ended]).toEqual([true, true, true, false]);
  });

  it('hands a completed run to every wait armed up to its end, and returns the run a lone request completes, before any wait', () => {
    const waits = new ResultWaits();
    const finishing = waits.finishing(['a']);
    expect(finishing.returnsRun('a', true)).toBe(true); // the request's only run, completed
    expect(waits.finishing(['f']).returnsRun('f', false)).toBe(false); // a failed run's row would go to no one
    const later = waits.arm('a');
    const run = ended('a');
    finishing.ended('a', run);
    const afterEnd = waits.arm('a'); // armed after the end was handed out: it reads
    finishing.end();
    expect([later.finished, later.ended]).toEqual([run, true]);
    expect([afterEnd.finished, afterEnd.ended]).toEqual([undefined, false]);
  });

  it('tells the waits a run ended without one when its finish returned none, and forgets released waits', () => {
    const waits = new ResultWaits();
    const released = waits.arm('a');
    released.release();
    released.release();
    const wait = waits.arm('a');
    const finishing = waits.finishing(['a', 'b']);
    expect(finishing.returnsRun('a', true)).toBe(true);
    finishing.ended('a', undefined);
    finishing.end();
    expect([wait.finished, wait.ended]).toEqual([undefined, true]);
    expect([released.finished, released.ended]).toEqual([undefined, false]);
    wait.release();
    expect(waits.finishing(['a', 'b']).returnsRun('a', true)).toBe(false);
  });

  it("keeps a wait's settled() pending while requests here may be ending its run, up to its timeout", async () => {
    const waits = new ResultWaits();
    const wait = waits.arm('a');
    await expect(wait.settled(60_000)).resolves.toBeUndefined(); // nothing under way
    const first = waits.finishing(['a', 'b']);
    const second = waits.finishing(['a']);
    waits.finishing([]).end();
    let settled = false;
    void wait.settled(60_000).then(() => (settled = true));
    first.end();
    await turn();
    expect(settled).toBe(false);
    second.end();
    second.end();
    await turn();
    expect(settled).toBe(true);
    const stuck = waits.finishing(['a']);
    const began = Date.now();
    await wait.settled(50);
    expect(Date.now() - began).toBeGreaterThanOrEqual(45);
    stuck.end();
  });
});
