import type { SqlExecutor } from '../database';

/**
 * Refreshes the claims a worker still holds (runs $1 at revisions $2) and returns the ids it no longer holds. The
 * revision check means a worker whose run was taken over cannot revive its claim.
 *
 * A heartbeat never waits for a row lock (SKIP LOCKED): a run locked right now is being written (most often this
 * worker's own report finishing or suspending it, or a claim re-checking an idle run) and is skipped, neither
 * refreshed nor reported lost; the writer settles it, and the next heartbeat sees the outcome. Never waiting, a
 * heartbeat cannot take part in a deadlock. "Lost" is judged on the statement's snapshot, so a run taken over at
 * this very moment is reported one heartbeat later, never a run still held.
 */
const REFRESH_CLAIMS = `WITH beat AS (
    SELECT * FROM unnest($1::uuid[], $2::integer[]) AS h(id, revision)
  ), held AS MATERIALIZED (
    SELECT r.id FROM runs r JOIN beat h ON r.id = h.id AND r.revision = h.revision
     WHERE r.status = 'running' COLLATE "C"
     ORDER BY r.id
     FOR UPDATE OF r SKIP LOCKED
  ), refreshed AS (
    UPDATE runs r SET heartbeat_at = now() FROM held WHERE r.id = held.id
  )
  SELECT h.id FROM beat h
   WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = h.id AND r.revision = h.revision AND r.status = 'running' COLLATE "C")`;

/** Refreshes claims (see above); returns the ids of the runs no longer held. */
export async function refreshClaims(db: SqlExecutor, runs: { id: string; expectedRevision: number }[]): Promise<string[]> {
  const lost = await db.query<{ id: string }>(REFRESH_CLAIMS, [runs.map((run) => run.id), runs.map((run) => run.expectedRevision)]);
  return lost.map((row) => row.id);
}
