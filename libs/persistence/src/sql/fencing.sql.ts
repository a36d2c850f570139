import type { StepKind, StoredTask } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { jsonParam } from './json-param';
import type { RunOutcome } from './reports.sql';

/*
 * What a fenced write that matched nothing finds out afterwards: whether its run exists at all (a stale revision,
 * 409, or no such run, 404), the step recorded first for its key (to adopt), or whether it landed before (a
 * resend whose first answer was lost). Plain reads: they run on the caller's executor, in its transaction when
 * it has one (taking a second pool connection while holding one deadlocks a small pool under load: every holder
 * waits for a connection only a holder can free).
 */

const FIND_EXISTING_RUNS = `SELECT id FROM runs WHERE id = ANY($1::uuid[])`;

/** The ids among `ids` of runs that exist. */
export async function findExistingRunIds(db: SqlExecutor, ids: string[]): Promise<string[]> {
  return (await db.query<{ id: string }>(FIND_EXISTING_RUNS, [ids])).map((row) => row.id);
}

/** Recorded steps by run ($1) and key ($2), each with its input's position (`n`). */
const FIND_STEPS = `SELECT w.n, t.key, t.kind, t.seq, t.status, t.attempts, t.output, t.error
  FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS w(run_id, key, n)
  JOIN tasks t ON t.run_id = w.run_id AND t.key = w.key`;

/** Recorded steps by run and key, in one statement; undefined where there is none. */
export async function findSteps(db: SqlExecutor, wanted: { runId: string; key: string }[]): Promise<(StoredTask | undefined)[]> {
  if (wanted.length === 0) return [];
  const rows = await db.query<StoredTask & { n: string }>(FIND_STEPS, [wanted.map((item) => item.runId), wanted.map((item) => item.key)]);
  const byPosition = new Map(rows.map(({ n, ...step }) => [Number(n), step as StoredTask]));
  return wanted.map((_, index) => byPosition.get(index + 1));
}

/**
 * Outcomes that landed already: a worker sends one again when the answer to the first was lost (its connection
 * died at COMMIT, which PostgreSQL may still have made durable). The first moved the run to `expectedRevision + 1`
 * with this very status and output (or error), which nothing else can do (every write at that revision is fenced
 * to its one holder), so the resend can be answered as the first was instead of with a 409 that would make the
 * worker give the run up. A different outcome does not match.
 */
const FIND_LANDED_OUTCOMES = `SELECT i.n, r.revision, r.workflow
  FROM unnest($1::uuid[], $2::integer[], $3::text[], $4::jsonb[], $5::jsonb[]) WITH ORDINALITY AS i(run_id, revision, status, output, error, n)
  JOIN runs r ON r.id = i.run_id AND r.revision = i.revision + 1 AND r.status = i.status
 WHERE CASE WHEN i.status = 'completed' THEN r.output IS NOT DISTINCT FROM i.output ELSE r.error IS NOT DISTINCT FROM i.error END`;

/** For each outcome, the revision and workflow it left its run at if it landed before (see above), else undefined. */
export async function findLandedOutcomes(
  db: SqlExecutor,
  items: { runId: string; expectedRevision: number; outcome: RunOutcome }[],
): Promise<({ revision: number; workflow: string } | undefined)[]> {
  if (items.length === 0) return [];
  const rows = await db.query<{ n: string; revision: number; workflow: string }>(FIND_LANDED_OUTCOMES, [
    items.map((item) => item.runId),
    items.map((item) => item.expectedRevision),
    items.map((item) => item.outcome.status),
    items.map((item) => (item.outcome.status === 'completed' ? jsonParam(item.outcome.output) : null)),
    items.map((item) => (item.outcome.status === 'failed' ? jsonParam(item.outcome.error) : null)),
  ]);
  const byPosition = new Map(rows.map(({ n, revision, workflow }) => [Number(n), { revision, workflow }]));
  return items.map((_, index) => byPosition.get(index + 1));
}

/**
 * A write that suspends run $1 at step $3 (of kind $4), sent again because the answer to the first was lost: if
 * the first landed, the run waits at revision $2 + 1 at that very step, which only the holder of that claim can
 * have made so (also once its timer or a wake came due: the step stays waiting until a claim resolves it). Once
 * the wait was resolved (claimed again, an event delivered, the child ended), nothing matches.
 */
const FIND_LANDED_SUSPENSION = `SELECT key, kind, seq, status, attempts, output, error FROM tasks
 WHERE run_id = $1 AND key = $3 AND kind = $4 AND status = 'waiting'
   AND EXISTS (SELECT FROM runs r WHERE r.id = $1 AND r.revision = $2 + 1 AND r.status = 'waiting' COLLATE "C")`;

/** The waiting step a suspension that landed before left (see above), or undefined. */
export async function findLandedSuspension(
  db: SqlExecutor,
  params: { runId: string; expectedRevision: number; key: string; kind: StepKind },
): Promise<StoredTask | undefined> {
  const [landed] = await db.query<StoredTask>(FIND_LANDED_SUSPENSION, [params.runId, params.expectedRevision, params.key, params.kind]);
  return landed;
}
