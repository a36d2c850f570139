import { describe, expect, it } from '@jest/globals';
import { WaitingClaims } from './waiting-claims.service';

const connected = () => false;

describe('WaitingClaims', () => {
  it('gives a claim to one start only, even when it waits for several queues', () => {
    const waiting = new WaitingClaims();
    waiting.offer({ workerId: 'w-1' }, ['a:1', 'b:1'], connected);
    expect(waiting.take('b:1')?.workerId).toBe('w-1');
    expect(waiting.take('a:1')).toBeUndefined();
    expect(waiting.take('b:1')).toBeUndefined();
  });

  it('takes the claim that waited longest first', () => {
    const waiting = new WaitingClaims();
    waiting.offer({ workerId: 'w-1' }, ['a:1'], connected);
    waiting.offer({ workerId: 'w-2' }, ['a:1'], connected);
    expect([waiting.take('a:1')?.workerId, waiting.take('a:1')?.workerId, waiting.take('a:1')]).toEqual(['w-1', 'w-2', undefined]);
  });

  it('offers a withdrawn claim to no start, from any of its queues', () => {
    const waiting = new WaitingClaims();
    const offer = waiting.offer({ workerId: 'w-1' }, ['a:1', 'b:1'], connected);
    expect(offer.withdraw()).toBe(true);
    expect(offer.withdraw()).toBe(true);
    expect(waiting.take('a:1')).toBeUndefined();
    expect(waiting.take('b:1')).toBeUndefined();
  });

  it('tells a claim taken by a start that it cannot withdraw, and hands it what the start settled', async () => {
    const waiting = new WaitingClaims();
    const offer = waiting.offer({ workerId: 'w-1' }, ['a:1'], connected);
    const claim = waiting.take('a:1')!;
    await offer.taken;
    expect(offer.withdraw()).toBe(false);
    const run = { id: 'r', workflow: 'a', version: '1', queue: 'a:1', revision: 1, attempt: 1, input: null, tasks: [] };
    claim.settle(run);
    expect(await offer.handed).toBe(run);
  });

  it('passes over a claim whose worker went away, leaving it to its own withdrawal', () => {
    const waiting = new WaitingClaims();
    let gone = true;
    waiting.offer({ workerId: 'w-1' }, ['a:1'], () => gone);
    expect(waiting.take('a:1')).toBeUndefined();
    gone = false;
    expect(waiting.take('a:1')?.workerId).toBe('w-1');
  });
});
