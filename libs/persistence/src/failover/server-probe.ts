import { settleWithin } from '@nest-durable/common';
import { Client, type ClientBase } from 'pg';
import type { DatabaseTarget, Endpoint, TargetSessionAttrs } from './database-url';

/** SQLSTATE of a write refused because the session is read-only (a standby, or a demoted primary). */
export const READ_ONLY_SQL_TRANSACTION = '25006';

/**
 * How long a probe may take in all (connect, start-up, the check): a server that accepts connections but never
 * answers (stalled storage, a SIGSTOPped postmaster, a partition after the handshake) costs this, once per search.
 */
export const PROBE_TIMEOUT_MS = 5_000;

/** No server of DATABASE_URL takes writes now (say, between a primary's death and its standby's promotion). */
export class NoPrimaryError extends Error {
  /** Class 08 (connection exception), so that it reads as a lost connection: a 503, and waited out at start. */
  readonly code = '08001';
}

/** Checks one server: resolves whether it takes writes, rejects when it cannot be reached or does not answer in time. */
export type ServerProbe = (endpoint: Endpoint) => Promise<boolean>;

/** Whether a session passes `target_session_attrs`, from what it reports (`SHOW transaction_read_only`, `pg_is_in_recovery()`). */
export async function sessionPasses(session: Pick<ClientBase, 'query'>, attrs: TargetSessionAttrs): Promise<boolean> {
  const { rows } = await session.query<{ read_only: string; in_recovery: boolean }>(
    `SELECT current_setting('transaction_read_only') AS read_only, pg_is_in_recovery() AS in_recovery`,
  );
  return attrs === 'primary' ? !rows[0].in_recovery : rows[0].read_only === 'off';
}

/**
 * One short session to `endpoint`: whether it passes the target's `target_session_attrs`. The whole probe is
 * bounded by `timeoutMs` (a connect timeout alone would leave a check that is never answered waiting forever, and
 * the search with it); a probe that runs out of time has its socket destroyed, not ended (an end waits for the
 * server).
 */
export async function probeServer(target: DatabaseTarget, applicationName: string, endpoint: Endpoint, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  const client = new Client({ connectionString: target.url, application_name: applicationName });
  Object.assign(client, endpoint);
  client.on('error', () => undefined);
  const checked = client.connect().then(() => sessionPasses(client, target.targetSessionAttrs ?? 'read-write'));
  try {
    const passes = await settleWithin(checked, timeoutMs, () => new Error(`no answer in ${timeoutMs} ms`));
    await client.end().catch(() => undefined);
    return passes;
  } catch (error) {
    destroySession(client);
    throw error;
  }
}

/** Ends `session` unless it is ending already (pg-pool reads the same field to tell): for a server that still answers. */
export function endSession(session: Client): void {
  if (!(session as unknown as { _ending: boolean })._ending) void session.end().catch(() => undefined);
}

/**
 * Closes `session`'s socket at once, for a server that may never answer again (an end would wait for it): what the
 * session runs fails as a lost connection, and a pool drops it.
 */
export function destroySession(session: Client): void {
  (session as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
}
