import { settleWithin } from '@nest-durable/common';
import type { Client, ClientConfig } from 'pg';
import { PooledClient } from '../pooled-client';
import { type Endpoint, show } from './database-url';
import type { PrimaryLocator } from './primary-locator';
import { destroySession, NoPrimaryError, READ_ONLY_SQL_TRANSACTION } from './server-probe';

/** The Client class of `locator`'s sessions: a PooledClient that connects to the primary and keeps the locator informed. */
export function primaryClientClass(locator: PrimaryLocator): typeof PooledClient {
  return class PrimaryClient extends PooledClient {
    private endpoint: Endpoint | undefined;
    /** The session's `connectionTimeoutMillis`: it bounds the search, the connect and the check together. */
    private readonly timeoutMs: number;
    private timedOut = false;

    constructor(config?: string | ClientConfig) {
      super(config);
      this.timeoutMs = (typeof config === 'object' && config.connectionTimeoutMillis) || 0;
      if (!locator.follows) return;
      // A session that dies takes its server's primacy with it, until a search confirms it.
      this.on('error', () => this.endpoint && locator.forget(this.endpoint));
      // A read-only answer: this server may no longer be the primary. The statement failed (nothing was written);
      // the locator checks the server and ends its sessions (this one too) if it no longer passes.
      this.connection.on('errorMessage', (message: { code?: string }) => {
        if (message.code === READ_ONLY_SQL_TRANSACTION && this.endpoint) void locator.refusedWrite(this.endpoint);
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

    /**
     * Within the session's connection timeout: a search that waits on a server that never answers, or a primary
     * that accepts the connection and then says nothing, fails this session (a pool's own timer cannot: it only
     * destroys a socket, which is not even open during the search) rather than hold its caller forever.
     */
    private connectToPrimary(): Promise<Client> {
      if (!this.timeoutMs) return this.connectAndCheck();
      return settleWithin(this.connectAndCheck(), this.timeoutMs, () => {
        this.timedOut = true;
        destroySession(this);
        return new NoPrimaryError(`no session on the PostgreSQL primary in ${this.timeoutMs} ms (connectionTimeoutMillis)`);
      });
    }

    private async connectAndCheck(): Promise<Client> {
      const endpoint = await locator.primary();
      // The caller gave up during the search: no connection is opened for no one.
      if (this.timedOut) throw new NoPrimaryError('the search for the primary outlasted the connection timeout');
      this.endpoint = endpoint;
      Object.assign(this, endpoint);
      let passes: boolean;
      try {
        await super.connect();
        passes = await locator.passes(this);
      } catch (error) {
        // Unreachable, too slow (the timeout destroyed the socket), or the check failed on a live connection: the
        // server is suspect (a search confirms or replaces it), and the connection is not left open.
        locator.forget(endpoint);
        destroySession(this);
        throw error;
      }
      if (passes && locator.opened(this)) return this;
      if (passes) {
        destroySession(this);
        throw new NoPrimaryError(`the PostgreSQL primary moved from ${show(endpoint)} while this session connected`);
      }
      locator.forget(endpoint);
      await this.end().catch(() => undefined);
      throw new NoPrimaryError(`PostgreSQL at ${show(endpoint)} no longer takes writes`);
    }
  };
}
