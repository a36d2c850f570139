import { describe, expect, it } from '@jest/globals';
import { nextHop } from './redis-sorted-set.subscriber';
import { MAX_GIVE_BACKS } from './redis-subscriber.options';

describe('sorted-set wake-ups given back', () => {
  it('count their hops in the member and are dropped past the limit', () => {
    let member: string | undefined = 'run-1:42';
    const seen: string[] = [];
    while (member) {
      seen.push(member);
      member = nextHop(member);
    }
    expect(seen).toEqual(['run-1:42', ...Array.from({ length: MAX_GIVE_BACKS }, (_, i) => `run-1:42#${i + 1}`)]);
  });
});
