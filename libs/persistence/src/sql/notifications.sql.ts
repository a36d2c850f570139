import { escapeIdentifier } from 'pg';
import type { SqlExecutor } from '../database';

/*
 * The LISTEN session's statements (NotificationListener in libs/outbox holds one session per coordinator).
 * NOTIFY is delivered at commit only, to sessions listening by then, and never replayed: the listener
 * re-reads the database after every (re)connect instead of trusting that it heard everything.
 */

/**
 * Starts listening on `channel` for the rest of this session (notifications committed from now on). The one
 * statement here made at run time: LISTEN takes a name, not a parameter, so the channel is quoted into it.
 */
export async function listen(session: SqlExecutor, channel: string): Promise<void> {
  await session.query(`LISTEN ${escapeIdentifier(channel)}`);
}

/**
 * The round trip that probes the LISTEN session, named so the session stays recognisable in pg_stat_activity
 * (whose `query` shows its last statement: `LISTEN …` until the first probe, this after).
 */
export const LISTEN_PROBE = `SELECT 1 /* wf: LISTEN session probe */`;

/** A round trip on the LISTEN session: a half-open socket stays silent without it. */
export async function probeListenSession(session: SqlExecutor): Promise<void> {
  await session.query(LISTEN_PROBE);
}
