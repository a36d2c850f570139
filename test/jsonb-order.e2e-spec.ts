import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { JsonValue } from '@nest-durable/client';
import { Client } from 'pg';
import { inJsonbOrder } from '../packages/worker/src/json-values';
import { TEST_SERVER_URL } from './support/database';

/**
 * The worker hands a task's result back to the handler before the coordinator has stored it, in the key
 * order a replay will read it back in (see RunContext.task). That order is PostgreSQL's: checked here
 * against the server itself, keys of every kind (lengths, case, non-ASCII, integer-like, nested).
 */
describe('inJsonbOrder', () => {
  const client = new Client({ connectionString: TEST_SERVER_URL });
  beforeAll(() => client.connect());
  afterAll(() => client.end());

  const readBack = async (value: JsonValue): Promise<JsonValue> =>
    JSON.parse((await client.query<{ text: string }>('SELECT $1::jsonb::text AS text', [JSON.stringify(value)])).rows[0].text);

  it('orders keys as jsonb stores them, so Object.keys sees what a replay sees', async () => {
    const value: JsonValue = {
      bb: 1,
      b: { zz: [{ yb: 1, y: 2 }], a: null, ä: 1, Z: 2 },
      a: 3,
      é: 4,
      '€': 5,
      10: 6,
      1: 7,
      B: 8,
      aa: [{ ab: 1, aa: 2, '': 3 }],
      ab: 'x',
      '': 0,
    };
    const ours = inJsonbOrder(value);
    const stored = await readBack(value);
    expect(ours).toEqual(stored);
    const keysDeep = (v: JsonValue): unknown =>
      Array.isArray(v) ? v.map(keysDeep) : v !== null && typeof v === 'object' ? Object.entries(v).map(([k, inner]) => [k, keysDeep(inner)]) : v;
    expect(keysDeep(ours)).toEqual(keysDeep(stored));
    expect(keysDeep(value)).not.toEqual(keysDeep(stored));
  });
});
