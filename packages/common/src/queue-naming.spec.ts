import { InvalidRequestError } from './errors/engine.errors';
import { describe, expect, it } from '@jest/globals';
import { queueName } from './queue-naming';

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
});
