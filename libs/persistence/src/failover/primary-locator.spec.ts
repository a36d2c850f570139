import { describe, expect, it } from '@jest/globals';
import type { Client } from 'pg';
import { isConnectionLoss } from '../connection-loss';
import { parseDatabaseUrl } from './database-url';
import { NoPrimaryError, PrimaryLocator } from './primary-locator';

const URL = 'postgres://app@a:5432,b:5433,c:5434/app';

/** A locator whose probes answer from `servers` (by port): writable, read-only, or unreachable. */
function locatorOver(servers: Record<number, 'writable' | 'read-only' | 'down'>) {
  const probed: number[] = [];
  const locator = new PrimaryLocator(parseDatabaseUrl(URL), 'test', async ({ port }) => {
    probed.push(port);
    if (servers[port] === 'down') throw new Error('connect ECONNREFUSED');
    return servers[port] === 'writable';
  });
  return { locator, probed, servers };
}

describe('PrimaryLocator (the probes faked)', () => {
  it('uses one host unchecked, as node-postgres always did', () => {
    expect(new PrimaryLocator(parseDatabaseUrl('postgres://app@a/app'), 'test').follows).toBe(false);
    expect(new PrimaryLocator(parseDatabaseUrl(URL), 'test').follows).toBe(true);
  });

  it('finds the writable server among several, probing each once however many sessions ask at the same time', async () => {
    const { locator, probed } = locatorOver({ 5432: 'down', 5433: 'read-only', 5434: 'writable' });
    const found = await Promise.all([locator.primary(), locator.primary(), locator.primary()]);
    expect(found).toEqual([
      { host: 'c', port: 5434 },
      { host: 'c', port: 5434 },
      { host: 'c', port: 5434 },
    ]);
    expect(probed.sort()).toEqual([5432, 5433, 5434]);
    // Known now: no more probes until a session fails on it.
    await locator.primary();
    expect(probed).toHaveLength(3);
  });

  it('searches again once the known primary failed a session (a promoted standby is found), and not for another server', async () => {
    const { locator, probed, servers } = locatorOver({ 5432: 'writable', 5433: 'read-only', 5434: 'down' });
    const first = await locator.primary();
    locator.forget({ host: 'b', port: 5433 });
    expect(await locator.primary()).toBe(first);
    expect(probed).toHaveLength(3);
    Object.assign(servers, { 5432: 'down', 5433: 'writable' });
    locator.forget(first);
    expect(await locator.primary()).toEqual({ host: 'b', port: 5433 });
    expect(probed).toHaveLength(6);
  });

  it('fails with a connection error naming every server when none takes writes (a 503; waited out at start)', async () => {
    const { locator } = locatorOver({ 5432: 'down', 5433: 'read-only', 5434: 'read-only' });
    const error = await locator.primary().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NoPrimaryError);
    expect((error as Error).message).toBe('no PostgreSQL of DATABASE_URL takes writes: a:5432 (connect ECONNREFUSED), b:5433 (read-only), c:5434 (read-only)');
    expect(isConnectionLoss(error)).toBe(true);
  });

  it("fails a long-lived session's probe once its server no longer takes writes, and searches again (LISTEN and lock sessions move)", async () => {
    const { locator, probed } = locatorOver({ 5432: 'writable', 5433: 'read-only', 5434: 'down' });
    await locator.primary();
    const session = (readOnly: 'on' | 'off') =>
      ({ host: 'a', port: 5432, query: async () => ({ rows: [{ read_only: readOnly, in_recovery: false }] }) }) as unknown as Client;
    await locator.confirm(session('off'));
    await locator.primary();
    expect(probed).toHaveLength(3);
    await expect(locator.confirm(session('on'))).rejects.toThrow(new NoPrimaryError('PostgreSQL at a:5432 no longer takes writes'));
    await locator.primary();
    expect(probed).toHaveLength(6);
  });

  it('counts a read-only answer (SQLSTATE 25006) as the loss of the primary, not as a failed statement', () => {
    expect(isConnectionLoss(Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }))).toBe(true);
  });
});
