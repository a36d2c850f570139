import { describe, expect, it } from '@jest/globals';
import { eventMatchProblem, EventMatchSchema, MATCH_FIELDS_MAX } from './event-match';
import { decode } from './validation';

describe('an event wait’s match (event-match.ts)', () => {
  it('takes dotted field paths to JSON values', () => {
    const match = { orderId: 'o-1', 'customer.tier': 'gold', amount: 10, gift: null, items: [1, 2], address: { city: 'Lyon' } };
    expect(eventMatchProblem(match)).toBeUndefined();
    expect(decode(EventMatchSchema, match, 'match')).toEqual(match);
  });

  it.each([
    ['a function', () => true, 'must be a plain object'],
    ['an undefined value', { orderId: undefined }, 'match field "orderId" must be a JSON value'],
    ['a function value', { orderId: () => 'o-1' }, 'must be a JSON value'],
    ['a date value', { at: new Date(0) }, 'must be a JSON value'],
    ['NaN', { n: Number.NaN }, 'must be a JSON value'],
  ])('the worker refuses %s, saying why', (_, match, problem) => {
    expect(eventMatchProblem(match)).toContain(problem);
  });

  it.each([
    ['an array', [['orderId', 'o-1']], 'must be a plain object', 'invalid_match'],
    ['null', null, 'must be a plain object', 'invalid_match'],
    ['no field', {}, 'must compare 1 to 32 fields', 'invalid_match'],
    ['too many fields', Object.fromEntries(Array.from({ length: MATCH_FIELDS_MAX + 1 }, (_, i) => [`f${i}`, i])), 'must compare 1 to 32', 'invalid_match'],
    ['an empty path segment', { 'customer..tier': 'gold' }, 'match field "customer..tier" must be field names joined by dots', 'invalid_match'],
    ['a leading dot', { '.tier': 'gold' }, 'must be field names joined by dots', 'invalid_match'],
    ['a NUL character', { orderId: 'o\u0000' }, 'NUL character', 'json_nul_character'],
  ])('the worker and the coordinator refuse %s', (_, match, problem, reason) => {
    expect(eventMatchProblem(match)).toContain(problem);
    expect(() => decode(EventMatchSchema, match, 'match')).toThrow(expect.objectContaining({ reason }));
  });
});
