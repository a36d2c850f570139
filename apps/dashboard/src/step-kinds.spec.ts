import { describe, expect, it } from '@jest/globals';
import { branchOf, isLostBranch, shownOutput } from './step-kinds';

describe('step kinds', () => {
  it("shows a token step's token masked, keeping no character of its secret part", () => {
    const token = 'wfct_Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5';
    expect(shownOutput({ kind: 'token', output: { token } })).toEqual({ token: 'wfct_••••••••' });
    expect(JSON.stringify(shownOutput({ kind: 'token', output: { token } }))).not.toContain(token.slice(5, 9));
    expect(shownOutput({ kind: 'external', output: { approved: true } })).toEqual({ approved: true });
  });

  it("reads a wait group's branch from its key, and a lost one from its output", () => {
    expect(branchOf({ key: 'group:race#2/1' })).toEqual({ group: 'race', number: 2 });
    expect(branchOf({ key: 'group:race#2' })).toBeUndefined();
    expect(isLostBranch({ key: 'group:race#1/0', output: { lost: true } })).toBe(true);
    expect(isLostBranch({ key: 'group:race#1/1', output: 'paid' })).toBe(false);
    expect(isLostBranch({ key: 'event:paid#1', output: { lost: true } })).toBe(false);
  });
});
