import { Logger } from '@nestjs/common';
import { Client, type ClientBase, type ClientConfig } from 'pg';
import { PooledClient } from '../pooled-client';
import type { DatabaseTarget, Endpoint, TargetSessionAttrs } from './database-url';

/** SQLSTATE of a write refused because the session is read-only (a standby, or a demoted primary). */
export const READ_ONLY_SQL_TRANSACTION = '25006';

/** How long a probe waits for a server to answer (a host that drops packets costs this, once per search). */
const PROBE_TIMEOUT_MS = 5_000;

/** No server of DATABASE_URL takes writes now (say, between a primary's death and its standby's promotion). */
export class NoPrimaryError extends Error {
  /** Class 08 (connection exception), so that it reads as a lost connection: a 503, and waited out at start. */
  readonly code = '08001';
}

/** Whether a session passes `target_session_attrs`, from what it reports (`SHOW transaction_read_only`, `pg_is_in_recovery()`). */
export async function sessionPasses(session: Pick<ClientBase, 'query'>, attrs: TargetSessionAttrs): Promise<boolean> {
  const { rows } = await session.query<{ read_only: string; in_recovery: boolean }>(
    `SELECT current_setting('transaction_read_only') AS read_only, pg_is_in_recovery() AS in_recovery`,
  );
  return attrs === 'primary' ? !rows[0].in_recovery : rows[0].read_only === 'off';
}

/** Checks one server: resolves whether it takes writes, rejects when it cannot be reached. */
export type ServerProbe = (endpoint: Endpoint) => Promise<boolean>;

/**
 * Which of DATABASE_URL's servers is the primary, for every session the coordinator opens (both pools, the LISTEN
 * session, the lock sessions): node-postgres takes one host, so libpq's multi-host failover is done here. Every
 * session is opened with `Client`, which connects to the primary found last, or searches the hosts for one when
 * none is known (all at once: the first writable one to answer wins), and checks the session as libpq does. A
 * session that dies, or is answered that it is read-only, makes the primary unknown again, so the next session
 * searches: the coordinator follows a promoted standby without a restart. With one host and no
 * `target_session_attrs`, sessions go to that host unchecked, as they always did.
 */
export class PrimaryLocator {
  private readonly logger = new Logger(PrimaryLocator.name);
  private known: Endpoint | undefined;
  private searching: Promise<Endpoint> | undefined;
  /** Every open session of `Client`, so that those on a server found read-only can be ended at once. */
  private readonly sessions = new Set<Client>();
  /** A pg Client class whose sessions connect to the primary (give it to pools as `Client`, or construct it). */
  readonly Client: typeof PooledClient;

  constructor(
    readonly target: DatabaseTarget,
    /** application_name of the search's short sessions (the process's own: they belong to it). */
    applicationName: string,
    private readonly probe: ServerProbe = (endpoint) => probeServer(target, applicationName, endpoint),
  ) {
    this.Client = primaryClientClass(this);
  }

  /** The settings every session shares (the URL's user, database, ssl…); the host and port are the primary's. */
  get connectionString(): string {
    return this.target.url;
  }

  /** Whether sessions follow the primary among several servers (and are checked); else the one host is used as is. */
  get follows(): boolean {
    return this.target.targetSessionAttrs !== undefined;
  }

  /** The primary: the one found last, or the first writable server to answer a search. */
  primary(): Promise<Endpoint> {
    if (this.known) return Promise.resolve(this.known);
    this.searching ??= this.search().finally(() => (this.searching = undefined));
    return this.searching;
  }

  /** `endpoint` failed a session (lost, refused, read-only): the next session searches again. */
  forget(endpoint: Endpoint): void {
    if (this.known?.host !== endpoint.host || this.known.port !== endpoint.port) return;
    this.known = undefined;
    this.logger.warn(`PostgreSQL at ${show(endpoint)} is no longer known to be the primary: the next session looks for it`);
  }

  /** `session` connected (and passed the check): it is tracked until it ends. */
  opened(session: Client): void {
    this.sessions.add(session);
    session.once('end', () => this.sessions.delete(session));
  }

  /**
   * A session on `endpoint` was answered that it is read-only: the server is no longer the primary. Every other
   * session on it is ended now (what it runs fails as a lost connection, its holder replaces it, and the new
   * session finds the primary) rather than failing one write each, or serving stale reads, until it is dropped.
   */
  readOnly(endpoint: Endpoint, answered: Client): void {
    this.forget(endpoint);
    for (const session of this.sessions) {
      if (session !== answered && session.host === endpoint.host && session.port === endpoint.port) endSession(session);
    }
  }

  /** Whether a new session on the primary passes `target_session_attrs` (libpq checks every session it opens). */
  passes(session: Pick<ClientBase, 'query'>): Promise<boolean> {
    return sessionPasses(session, this.target.targetSessionAttrs ?? 'read-write');
  }

  /**
   * For a long-lived session that never writes (the LISTEN session, a lock session), from its holder's probe:
   * rejects once its server no longer takes writes (a standby promoted while the old primary lives on, read-only),
   * so the holder replaces it by one on the primary. Nothing to check with one unchecked host.
   */
  async confirm(session: Client): Promise<void> {
    if (!this.follows || (await this.passes(session))) return;
    const endpoint = { host: session.host, port: session.port };
    this.forget(endpoint);
    throw new NoPrimaryError(`PostgreSQL at ${show(endpoint)} no longer takes writes`);
  }

  private async search(): Promise<Endpoint> {
    const failures = new Map<Endpoint, string>();
    const found = await new Promise<Endpoint | undefined>((resolve) => {
      let pending = this.target.hosts.length;
      for (const endpoint of this.target.hosts) {
        this.probe(endpoint)
          .then(
            (writable) => (writable ? resolve(endpoint) : failures.set(endpoint, 'read-only')),
            (error: Error) => failures.set(endpoint, error.message),
          )
          .finally(() => --pending === 0 && resolve(undefined));
      }
    });
    if (!found) {
      const seen = this.target.hosts.map((endpoint) => `${show(endpoint)} (${failures.get(endpoint)})`).join(', ');
      throw new NoPrimaryError(`no PostgreSQL of DATABASE_URL takes writes: ${seen}`);
    }
    if (this.target.hosts.length > 1) this.logger.log(`PostgreSQL primary: ${show(found)}`);
    this.known = found;
    return found;
  }
}

function show(endpoint: Endpoint): string {
  return `${endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}`;
}

/** One short session to `endpoint`: whether it passes the target's `target_session_attrs`. */
async function probeServer(target: DatabaseTarget, applicationName: string, endpoint: Endpoint): Promise<boolean> {
  const client = new Client({ connectionString: target.url, connectionTimeoutMillis: PROBE_TIMEOUT_MS, application_name: applicationName });
  Object.assign(client, endpoint);
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await sessionPasses(client, target.targetSessionAttrs ?? 'read-write');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Ends `session` unless it is ending already (pg-pool reads the same field to tell). */
function endSession(session: Client): void {
  if (!(session as unknown as { _ending: boolean })._ending) void session.end().catch(() => undefined);
}

/** The Client class of `locator`'s sessions: a PooledClient that connects to the primary and keeps the locator informed. */
function primaryClientClass(locator: PrimaryLocator): typeof PooledClient {
  return class PrimaryClient extends PooledClient {
    private endpoint: Endpoint | undefined;
    private leaving = false;

    constructor(config?: string | ClientConfig) {
      super(config);
      if (!locator.follows) return;
      // A session that dies takes its server's primacy with it, until a search confirms it.
      this.on('error', () => this.endpoint && locator.forget(this.endpoint));
      // A read-only answer: this server is no longer the primary. The statement failed (nothing was written); this
      // session is ended once the server is done answering (its pool drops it), the server's other sessions at once.
      this.connection.on('errorMessage', (message: { code?: string }) => {
        if (message.code !== READ_ONLY_SQL_TRANSACTION || this.leaving || !this.endpoint) return;
        this.leaving = true;
        locator.readOnly(this.endpoint, this);
        this.connection.once('readyForQuery', () => endSession(this));
      });
    }

    /** pg-pool connects with a callback (and ignores what is returned); everything else awaits the promise. */
    override connect(callback?: (...args: never[]) => void): Promise<Client> {
      const connected = locator.follows ? this.connectToPrimary() : super.connect();
      if (!callback) return connected;
      const answer = callback as (error: Error | null) => void;
      return connected.then(
        (client) => {
          answer(null);
          return client;
        },
        (error: Error) => {
          answer(error);
          return this;
        },
      );
    }

    private async connectToPrimary(): Promise<Client> {
      const endpoint = await locator.primary();
      this.endpoint = endpoint;
      Object.assign(this, endpoint);
      try {
        await super.connect();
        if (await locator.passes(this)) {
          locator.opened(this);
          return this;
        }
      } catch (error) {
        locator.forget(endpoint);
        throw error;
      }
      locator.forget(endpoint);
      await this.end().catch(() => undefined);
      throw new NoPrimaryError(`PostgreSQL at ${show(endpoint)} no longer takes writes`);
    }
  };
}
