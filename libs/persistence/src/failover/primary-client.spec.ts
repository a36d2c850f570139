import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Pool } from 'pg';
import { eventually } from '../../../../test/support/poll';
import { TEST_SERVER_URL } from '../../../../test/support/database';
import { SilentPostgres } from '../../../../test/support/silent-postgres';
import { isConnectionLoss } from '../connection-loss';
import { parseDatabaseUrl } from './database-url';
import { PrimaryLocator } from './primary-locator';
import { NoPrimaryError } from './server-probe';

const TIMEOUT_MS = 300;
/** Far above TIMEOUT_MS, far below Jest's timeout: a session that is not bounded fails the test, not the suite. */
const BOUND_MS = 5_000;

/** A locator over `a` and `b` whose probes never answer: its search waits as on servers that stalled. */
function stalledSearch(): PrimaryLocator {
  return new PrimaryLocator(parseDatabaseUrl('postgres://app@a:5432,b:5433/app'), 'test', () => new Promise<boolean>(() => undefined));
}

async function settledWithin<T>(promise: Promise<T>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const error = await Promise.race([
    promise.then(
      () => new Error('connected'),
      (caught: unknown) => caught,
    ),
    new Promise((resolve) => setTimeout(() => resolve(new Error(`still waiting after ${BOUND_MS} ms`)), BOUND_MS).unref()),
  ]);
  return { error, ms: Date.now() - started };
}

describe("a primary's session (PrimaryLocator's Client) is bounded by its connectionTimeoutMillis", () => {
  let silent: SilentPostgres;

  beforeAll(async () => {
    silent = await SilentPostgres.start();
  });

  afterAll(async () => {
    await silent.stop();
  });

  it('fails with a connection error when the search for the primary never settles (the LISTEN and lock sessions retry)', async () => {
    const locator = stalledSearch();
    const { error, ms } = await settledWithin(
      new locator.Client({ connectionString: locator.connectionString, connectionTimeoutMillis: TIMEOUT_MS }).connect(),
    );
    expect(error).toBeInstanceOf(NoPrimaryError);
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it("answers a pool's checkout with an error while the search never settles (the pool's own timer only destroys a socket not yet open)", async () => {
    const locator = stalledSearch();
    const pool = new Pool({ connectionString: locator.connectionString, Client: locator.Client, connectionTimeoutMillis: TIMEOUT_MS });
    try {
      const { error, ms } = await settledWithin(pool.query('SELECT 1'));
      // pg-pool wraps it ("Connection terminated due to connection timeout"): a lost connection, so a 503.
      expect(isConnectionLoss(error)).toBe(true);
      expect(ms).toBeLessThan(BOUND_MS);
    } finally {
      await pool.end();
    }
  });

  it('fails, closes its socket and forgets the primary when the primary lets it in and never answers its check (a stalled server)', async () => {
    let probes = 0;
    const target = parseDatabaseUrl(`postgres://app@127.0.0.1:${silent.port},127.0.0.1:1/app`);
    const locator = new PrimaryLocator(target, 'test', async ({ port }) => {
      probes++;
      return port === silent.port;
    });
    await locator.primary();
    const { error, ms } = await settledWithin(
      new locator.Client({ connectionString: locator.connectionString, connectionTimeoutMillis: TIMEOUT_MS }).connect(),
    );
    expect(error).toBeInstanceOf(NoPrimaryError);
    expect(ms).toBeLessThan(BOUND_MS);
    await eventually('the session closed on the silent server', async () => silent.open === 0, BOUND_MS);
    // Forgotten: the next session searches again.
    await locator.primary();
    expect(probes).toBe(4);
  });
});

describe("a primary's session whose connect ends after the primary was found elsewhere", () => {
  it('is closed and fails as a lost connection (it would idle in a pool on the former primary), the new primary kept', async () => {
    const server = new URL(TEST_SERVER_URL);
    const [port, other] = [Number(server.port || 5432), 1];
    let primaryPort = port;
    const target = parseDatabaseUrl(`postgres://${server.username}@${server.hostname}:${port},${server.hostname}:${other}/postgres`);
    const locator = new PrimaryLocator(target, 'test', async (endpoint) => endpoint.port === primaryPort);
    // The check of the new session passes on the server it reached; meanwhile a search finds the primary elsewhere.
    const check = locator.passes.bind(locator);
    locator.passes = async (session) => {
      const passes = await check(session);
      primaryPort = other;
      locator.forget({ host: server.hostname, port });
      await locator.primary();
      return passes;
    };
    const session = new locator.Client({ connectionString: locator.connectionString, connectionTimeoutMillis: BOUND_MS });
    const error = await session.connect().then(
      async () => {
        await session.end();
        return new Error('connected, on the former primary');
      },
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(NoPrimaryError);
    expect(isConnectionLoss(error)).toBe(true);
    expect((session as unknown as { connection: { stream: { destroyed: boolean } } }).connection.stream.destroyed).toBe(true);
    expect(await locator.primary()).toEqual({ host: server.hostname, port: other });
  });
});
