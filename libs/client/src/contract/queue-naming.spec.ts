import { InvalidRequestError } from './errors';
import { describe, expect, it } from '@jest/globals';
import { partitionCountKey, partitionFor, queueName, queueStreams, sortedSetKey, streamKey } from './queue-naming';

describe('queue naming', () => {
  it('joins workflow, version and optional shard', () => {
    expect(queueName('order-processing', '1.0.0')).toBe('order-processing:1.0.0');
    expect(queueName('order-processing', '1.0.0', 'eu-west')).toBe('order-processing:1.0.0:eu-west');
  });

  it.each([
    ['', '1'],
    ['a:b', '1'],
    ['ok', 'v 1'],
    ['x'.repeat(129), '1'],
  ])('refuses unsafe parts (%j, %j)', (workflow, version) => {
    expect(() => queueName(workflow, version)).toThrow(InvalidRequestError);
  });

  it('names Redis keys under the prefix', () => {
    expect(sortedSetKey('wf:', 'order-processing:1.0.0:eu-west')).toBe('wf:workflow:order-processing:1.0.0:eu-west');
    expect(streamKey('wf:', 'echo:1', 3)).toBe('wf:workflow.tasks.echo:1.3');
    expect(partitionCountKey('wf:')).toBe('wf:stream_partitions');
    expect(queueStreams('p:', ['a:1', 'b:2'], 2)).toEqual([
      'p:workflow.tasks.a:1.0',
      'p:workflow.tasks.a:1.1',
      'p:workflow.tasks.b:2.0',
      'p:workflow.tasks.b:2.1',
    ]);
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
