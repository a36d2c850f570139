import { settleWithin } from '@nest-durable/common';
import type { LockSession, LockSessions } from '@app/locking';
import type { PrimaryLocator } from '../failover/primary-locator';
import { sessionExecutor } from '../session-executor';
import { probeLockSession, tryAdvisoryLock } from '../sql/leader.sql';

const PROBE_TIMEOUT_MS = 5_000;

/**
 * Lock sessions on PostgreSQL: session-level advisory locks held on one dedicated connection each (not a
 * pooled one: a pool would hand the session, and so its locks, to other work). When the holder dies,
 * PostgreSQL ends its session and frees its locks.
 */
export class AdvisoryLockSessions implements LockSessions {
  constructor(
    private readonly primary: PrimaryLocator,
    private readonly applicationName: string,
  ) {}

  async open(): Promise<LockSession> {
    const client = new this.primary.Client({
      connectionString: this.primary.connectionString,
      application_name: this.applicationName,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    // An error is surfaced by the next probe (PooledClient listens, so it cannot end the process).
    await client.connect();
    const session = sessionExecutor(client);
    return {
      // Answering is not enough: a lock on a server that is no longer the primary excludes no one.
      probe: () =>
        settleWithin(
          probeLockSession(session).then(() => this.primary.confirm(client)),
          PROBE_TIMEOUT_MS,
          () => new Error(`no answer in ${PROBE_TIMEOUT_MS} ms`),
        ),
      tryLock: (name) => tryAdvisoryLock(session, name),
      end: () => client.end(),
    };
  }
}
