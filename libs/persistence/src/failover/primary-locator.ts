import { Logger } from '@nestjs/common';
import type { Client, ClientBase } from 'pg';
import type { PooledClient } from '../pooled-client';
import { type DatabaseTarget, type Endpoint, show } from './database-url';
import { primaryClientClass } from './primary-client';
import { destroySession, endSession, NoPrimaryError, probeServer, type ServerProbe, sessionPasses } from './server-probe';

export { NoPrimaryError } from './server-probe';

/**
 * Which of DATABASE_URL's servers is the primary, for every session the coordinator opens (both pools, the LISTEN
 * session, the lock sessions): node-postgres takes one host, so libpq's multi-host failover is done here. Every
 * session is opened with `Client`, which connects to the primary found last, or searches the hosts for one when
 * none is known (all at once: the first writable one to answer wins), and checks the session as libpq does. A
 * session that dies or times out, or a refused write on a server that then fails the check, makes the primary
 * unknown again, so the next session searches: the coordinator follows a promoted standby without a restart. With one host and no
 * `target_session_attrs`, sessions go to that host unchecked, as they always did.
 */
export class PrimaryLocator {
  private readonly logger = new Logger(PrimaryLocator.name);
  private known: Endpoint | undefined;
  private searching: Promise<Endpoint> | undefined;
  /** Every open session of `Client`, so that those on a server that is no longer the primary can be ended at once. */
  private readonly sessions = new Set<Client>();
  /** Servers being checked after a refused write (see refusedWrite), by `host:port`. */
  private readonly checking = new Map<string, Promise<void>>();
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

  /**
   * `session` connected (and passed the check): it is tracked until it ends, unless the primary was found on another
   * server while it connected (false: its connect began before that search and ended after leave() closed the old
   * server's sessions, so nothing would close it; idle in a pool, it would stay on the former primary). The caller
   * then fails as for a lost connection (a 503; a pg Client cannot connect twice), and the next session goes to the
   * primary found.
   */
  opened(session: Client): boolean {
    if (this.known && !on(session, this.known)) return false;
    this.sessions.add(session);
    session.once('end', () => this.sessions.delete(session));
    return true;
  }

  /**
   * A session on `endpoint` was answered that it is read-only (SQLSTATE 25006; the statement failed, nothing was
   * written). If the server no longer passes `target_session_attrs` (a demoted primary, a standby), it is no longer
   * the primary: every session on it is ended now (what it runs fails as a lost connection, its holder replaces it,
   * and the new session finds the primary) rather than failing one write each, or serving stale reads, until it is
   * dropped. If it still passes (with `primary`, a server not in recovery whose `default_transaction_read_only` is
   * on), the refusal was the statement's own: its sessions are left alone. One check per server at a time.
   */
  refusedWrite(endpoint: Endpoint): Promise<void> {
    const key = show(endpoint);
    const pending = this.checking.get(key);
    if (pending) return pending;
    const check = this.probe(endpoint)
      .catch(() => false)
      .then((passes) => {
        if (passes) return;
        this.forget(endpoint);
        for (const session of this.sessions) if (on(session, endpoint)) endSession(session);
      })
      .finally(() => this.checking.delete(key));
    this.checking.set(key, check);
    return check;
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
    this.leave(found);
    return found;
  }

  /**
   * Destroys every session on a server other than `primary`, the one just found: a former primary that vanished
   * without closing its connections (a partition, a dead machine, stalled storage) would otherwise hold them, and
   * whatever runs on them, until TCP gives up (a statement in flight: tcp_retries2, some 15 minutes). Destroyed,
   * not ended: an end waits for a server that may never answer.
   */
  private leave(primary: Endpoint): void {
    const stale = [...this.sessions].filter((session) => !on(session, primary));
    if (stale.length === 0) return;
    this.logger.warn(`closing ${stale.length} session(s) on PostgreSQL other than the primary ${show(primary)}`);
    for (const session of stale) destroySession(session);
  }
}

function on(session: Client, endpoint: Endpoint): boolean {
  return session.host === endpoint.host && session.port === endpoint.port;
}
