import type { LockSession, LockSessions } from '@app/locking';
import { Client } from 'pg';

const PROBE_TIMEOUT_MS = 5_000;

/**
 * Lock sessions on PostgreSQL: session-level advisory locks held on one dedicated connection each (not a
 * pooled one: a pool would hand the session, and so its locks, to other work). When the holder dies,
 * PostgreSQL ends its session and frees its locks.
 */
export class AdvisoryLockSessions implements LockSessions {
  constructor(
    private readonly url: string,
    private readonly applicationName: string,
  ) {}

  async open(): Promise<LockSession> {
    const client = new Client({ connectionString: this.url, application_name: this.applicationName, keepAlive: true, connectionTimeoutMillis: 5_000 });
    client.on('error', () => undefined); // surfaced by the next probe
    await client.connect();
    return {
      probe: async () => {
        await withTimeout(client.query('SELECT 1'), PROBE_TIMEOUT_MS);
      },
      // Safe under concurrency: pg_try_advisory_lock is atomic across sessions and never waits; a session
      // asking again for a lock it holds gets true (and holds it twice, which ending the session undoes).
      tryLock: async (name) => {
        const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [name]);
        return rows[0].locked;
      },
      end: () => client.end(),
    };
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
