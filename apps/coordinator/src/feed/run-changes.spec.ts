import { describe, expect, it } from '@jest/globals';
import { parseRunChanges } from './run-changes';

describe('parseRunChanges', () => {
  it('reads each entry of a notification as a change', () => {
    const payload = '[["0193e0a1-0000-7000-8000-000000000001", "echo", "1", "running", 2, 1796133769838]]';
    expect(parseRunChanges(payload)).toEqual([
      { id: '0193e0a1-0000-7000-8000-000000000001', workflow: 'echo', version: '1', status: 'running', revision: 2, at: '2026-12-01T14:02:49.838Z' },
    ]);
  });

  it('reads nothing from a payload that is not its format', () => {
    expect(parseRunChanges('not json')).toEqual([]);
    expect(parseRunChanges('{"a":1}')).toEqual([]);
    expect(parseRunChanges('[[1, 2]]')).toEqual([]);
  });
});
