import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import type { Client } from 'pg';
import { eventually } from '../../../../test/support/poll';
import { SilentPostgres } from '../../../../test/support/silent-postgres';
import { isConnectionLoss } from '../connection-loss';
import { parseDatabaseUrl } from './database-url';
import { NoPrimaryError, PrimaryLocator } from './primary-locator';
import { probeServer } from './server-probe';

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

/** An open session of the locator's on `port` of host `a`, faked: whether it was ended (politely) or destroyed. */
function sessionOn(locator: PrimaryLocator, port: number) {
  const state = { ended: false, destroyed: false, tracked: false };
  const session = Object.assign(new EventEmitter(), {
    host: 'a',
    port,
    _ending: false,
    connection: { stream: { destroy: () => (state.destroyed = true) } },
    end: async () => {
      state.ended = true;
    },
  });
  state.tracked = locator.opened(session as unknown as Client);
  return state;
}

describe('PrimaryLocator: sessions on a server that is no longer the primary', () => {
  const URL_A = 'postgres://app@a:5432,a:5433/app';

  it('destroys every session left on the former primary once a search finds the primary elsewhere (it may have vanished without closing them)', async () => {
    const servers: Record<number, boolean> = { 5432: true, 5433: false };
    const locator = new PrimaryLocator(parseDatabaseUrl(URL_A), 'test', async ({ port }) => servers[port]);
    await locator.primary();
    const [first, second] = [sessionOn(locator, 5432), sessionOn(locator, 5432)];
    // The same primary found again (a session merely died): its sessions stay.
    locator.forget({ host: 'a', port: 5432 });
    await locator.primary();
    expect([first.destroyed, second.destroyed]).toEqual([false, false]);
    // The standby promoted while the former primary is silent: no answer will ever end them, so they are destroyed.
    Object.assign(servers, { 5432: false, 5433: true });
    locator.forget({ host: 'a', port: 5432 });
    const onNew = sessionOn(locator, 5433);
    await locator.primary();
    expect([first.destroyed, second.destroyed, onNew.destroyed]).toEqual([true, true, false]);
  });

  it('refuses a session that finished connecting to the former primary after the primary was found elsewhere (left alone, it would idle in a pool on the old server)', async () => {
    const servers: Record<number, boolean> = { 5432: true, 5433: false };
    const locator = new PrimaryLocator(parseDatabaseUrl(URL_A), 'test', async ({ port }) => servers[port]);
    await locator.primary();
    Object.assign(servers, { 5432: false, 5433: true });
    locator.forget({ host: 'a', port: 5432 });
    await locator.primary();
    // Its connect began while 5432 was the primary, and its check passed before the switch: it opens only now.
    const late = sessionOn(locator, 5432);
    expect(late.tracked).toBe(false);
    expect(sessionOn(locator, 5433).tracked).toBe(true);
  });

  it("after a refused write (25006), ends the server's sessions only if the server fails the check (not a read-only transaction of its own)", async () => {
    let writable = true;
    const locator = new PrimaryLocator(parseDatabaseUrl(`${URL_A}?target_session_attrs=primary`), 'test', async ({ port }) => port === 5432 && writable);
    await locator.primary();
    const [a, b] = [sessionOn(locator, 5432), sessionOn(locator, 5432)];
    await locator.refusedWrite({ host: 'a', port: 5432 });
    expect([a.ended, b.ended]).toEqual([false, false]);
    expect(await locator.primary()).toEqual({ host: 'a', port: 5432 });
    writable = false;
    await locator.refusedWrite({ host: 'a', port: 5432 });
    expect([a.ended, b.ended]).toEqual([true, true]);
    await expect(locator.primary()).rejects.toThrow(NoPrimaryError);
  });
});

describe('PrimaryLocator: a probe of a server that lets it in and never answers (a real socket)', () => {
  it('settles the search within the probe timeout, closes the probe, and finds the primary on the next search', async () => {
    const silent = await SilentPostgres.start();
    try {
      const target = parseDatabaseUrl(`postgres://app@127.0.0.1:${silent.port},127.0.0.1:5433/app`);
      let promoted = false;
      const locator = new PrimaryLocator(target, 'test', async (endpoint) =>
        endpoint.port === silent.port ? probeServer(target, 'test', endpoint, 300) : promoted,
      );
      // The old primary stalled, the standby not promoted yet: the search ends, it does not wait on the silent server.
      await expect(locator.primary()).rejects.toThrow(
        new NoPrimaryError(`no PostgreSQL of DATABASE_URL takes writes: 127.0.0.1:${silent.port} (no answer in 300 ms), 127.0.0.1:5433 (read-only)`),
      );
      await eventually('the probe session closed', async () => silent.open === 0, 5_000);
      promoted = true;
      expect(await locator.primary()).toEqual({ host: '127.0.0.1', port: 5433 });
    } finally {
      await silent.stop();
    }
  });
});
