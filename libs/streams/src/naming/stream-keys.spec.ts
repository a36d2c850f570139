import { describe, expect, it } from '@jest/globals';
import calculateSlot from 'cluster-key-slot';
import { HASH_SLOTS, hashSlot } from './hash-slot';
import { partitionCountKey, partitionFor, partitionStreams, queueStreams, sortedSetKey, streamKey } from './stream-keys';

describe('stream key naming', () => {
  it('names Redis keys under the prefix, hash tag first', () => {
    expect(sortedSetKey('wf:', 'order-processing:1.0.0:eu-west')).toBe('wf:{zset}workflow:order-processing:1.0.0:eu-west');
    expect(streamKey('wf:', 'echo:1', 3, 4)).toMatch(/^wf:\{p3\/4\.\d+\}workflow\.tasks\.echo:1$/);
    expect(partitionCountKey('wf:')).toBe('wf:stream_partitions');
    expect(queueStreams('p:', ['a:1', 'b:2'], 2)).toEqual([
      streamKey('p:', 'a:1', 0, 2),
      streamKey('p:', 'a:1', 1, 2),
      streamKey('p:', 'b:2', 0, 2),
      streamKey('p:', 'b:2', 1, 2),
    ]);
    expect(partitionStreams('p:', ['a:1', 'b:2'], 1, 2)).toEqual([streamKey('p:', 'a:1', 1, 2), streamKey('p:', 'b:2', 1, 2)]);
  });

  it('spreads runs over partitions stably', () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `01a22c37-316c-762f-a717-${String(i).padStart(12, '0')}`);
    const counts = [0, 0, 0, 0];
    for (const id of ids) counts[partitionFor(id, 4)]++;
    expect(Math.min(...counts)).toBeGreaterThan(800);
    expect(partitionFor(ids[7], 4)).toBe(partitionFor(ids[7], 4));
    expect(partitionFor(ids[7], 1)).toBe(0);
  });
});

describe('Redis Cluster key layout', () => {
  const queues = ['order-processing:1.0.0', 'order-processing:1.0.0:eu-west', 'echo:1', 'side-effects:1'];
  const prefixes = ['', 'wf:', 'test:cluster:4f2a:'];

  it('computes the hash slot as Redis does', () => {
    const keys = ['', 'a', 'foo', '{user1000}.following', 'foo{{bar}}zap', 'foo{bar}{zap}', '{}', 'x{', 'ü{ß}', 'wf:{zset}workflow:echo:1'];
    for (let i = 0; i < 2_000; i++) keys.push(`k${i}:${(i * 7919).toString(36)}${i % 3 ? `{t${i % 17}}` : ''}`);
    for (const key of keys) expect([key, hashSlot(key)]).toEqual([key, calculateSlot(key)]);
    // An empty first tag hashes the whole key: CLUSTER KEYSLOT answers 8363 (cluster-key-slot 1.1.1 hashes "bar").
    expect(hashSlot('foo{}{bar}')).toBe(8363);
  });

  it('puts every sorted set in one slot, so one BZPOPMIN or script may name them all', () => {
    for (const prefix of prefixes) expect(slotsOf(queues.map((queue) => sortedSetKey(prefix, queue)))).toHaveLength(1);
  });

  it('puts partition n of every queue in one slot, so one read covers all of them', () => {
    for (const partitions of [1, 2, 3, 4, 16, 1024]) {
      for (let partition = 0; partition < partitions; partition++) {
        expect(slotsOf(prefixes.flatMap((prefix) => partitionStreams(prefix, queues, partition, partitions)))).toHaveLength(1);
      }
    }
  });

  it('spreads the partitions over distinct slots, evenly over masters holding equal ranges', () => {
    for (const partitions of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 16, 18, 24, 30, 32, 60, 64, 1000, 1024]) {
      const slots = Array.from({ length: partitions }, (_, n) => hashSlot(streamKey('wf:', 'echo:1', n, partitions)));
      expect(new Set(slots).size).toBe(partitions);
      for (const masters of [1, 2, 3, 5, 6]) {
        if (partitions % masters !== 0) continue;
        const perMaster = new Array(masters).fill(0);
        for (const slot of slots) perMaster[masterOf(slot, masters)]++;
        expect(perMaster).toEqual(new Array(masters).fill(partitions / masters));
      }
    }
    // Not a multiple: as even as it can be (4 over 3: 2, 1, 1).
    const four = Array.from({ length: 4 }, (_, n) => masterOf(hashSlot(streamKey('wf:', 'echo:1', n, 4)), 3));
    expect(new Set(four).size).toBe(3);
  });
});

/** Which of `masters` masters serves a slot when they hold equal contiguous ranges, as `redis-cli --cluster create` deals them. */
function masterOf(slot: number, masters: number): number {
  let first = 0;
  for (let master = 0; master < masters; master++) {
    const last = master === masters - 1 ? HASH_SLOTS - 1 : Math.round(((master + 1) * HASH_SLOTS) / masters - 1);
    if (slot >= first && slot <= last) return master;
    first = last + 1;
  }
  throw new Error(`slot ${slot} out of range`);
}

/** The distinct slots of `keys`, by ioredis's own hashing (one slot: one command may name them all). */
function slotsOf(keys: string[]): number[] {
  return [...new Set(keys.map((key) => calculateSlot(key)))];
}
