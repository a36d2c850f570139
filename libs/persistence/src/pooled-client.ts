import { Client, type ClientConfig } from 'pg';

/**
 * The base of every session's client (PrimaryLocator's `Client`, for both pools and the dedicated sessions): never
 * without an 'error' listener. node-postgres emits 'error' on a client
 * whose connection dies while no statement runs on it, and an unheard 'error' ends the process. pg-pool
 * listens only while a client is idle in the pool and drops its listener as it hands the client out;
 * the holder (pool.query, Database.transaction, TypeORM's query runner) adds its own, but the hand-out
 * can happen inside the parse of a read that also holds the backend's termination notice (a statement's
 * last reply, or a new session's first ReadyForQuery, and then `57P01 terminating connection`), and a
 * holder that awaited its client adds its listener only after that parse: the event went unheard and
 * the coordinator died (once, in test/database-faults.e2e-spec.ts). This listener keeps the event from
 * being fatal and nothing else: the statements on that connection fail on their own, and the pool drops
 * the client when it is released (it is no longer queryable).
 */
export class PooledClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}
