import { describe, expect, it } from '@jest/globals';
import { decide } from './group.repository';

describe('how a wait group is decided (GroupRepository)', () => {
  const branches = (...settled: (number | null)[]) => settled.map((settledAt, index) => ({ settledAt, index }));

  it('any: the branch that finished first, the first in the list among equals; none yet: wait', () => {
    expect(decide('any', branches(null, 30, 20))).toEqual({ mode: 'any', index: 2 });
    expect(decide('any', branches(null, 20, 20))).toEqual({ mode: 'any', index: 1 });
    expect(decide('any', branches(null, null))).toBeUndefined();
  });

  it('all: once every branch finished', () => {
    expect(decide('all', branches(1, null))).toBeUndefined();
    expect(decide('all', branches(1, 2))).toEqual({ mode: 'all' });
  });
});
