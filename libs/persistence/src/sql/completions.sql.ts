import type { JsonValue, StoredTask } from '@nest-durable/common';
import type { SqlExecutor } from '../database';
import { jsonParam } from './json-param';

/*
 * Completion tokens (CompletionRepository, StepRepository). A token's state changes only under its run's row lock:
 * its recording and the wait on it run under the lock a worker's fenced write takes (lockRunningRun), a completion
 * under the one a client command takes (lockRunStatus). So a completion and a wait never miss each other: the
 * completion either comes first and is kept (the wait finds it), or finds the wait recorded and resolves it.
 */

/**
 * Records token $5 at step $2 (kind `token`, completed at once: the step's output holds the token, so a
 * re-execution hands out the same one) and its row, expiring after $6 ms (null: never by itself), its wait to be
 * step $7. The caller holds the run's row lock and found no step at $2; the token is new (256 random bits).
 */
const INSERT_TOKEN_STEP = `WITH step AS (
    INSERT INTO tasks (run_id, key, kind, seq, name, status, attempts, output)
    VALUES ($1, $2, 'token', $3, $4, 'completed', 1, jsonb_build_object('token', $5::text))
    RETURNING key, kind, seq, status, attempts, output, error
  ), token AS (
    INSERT INTO completion_tokens (token, run_id, wait_key, expires_at)
    SELECT $5, $1, $7, now() + $6 * interval '1 millisecond' FROM step
  )
  SELECT * FROM step`;

/** Records a completion token and its step (see above). */
export async function insertTokenStep(
  db: SqlExecutor,
  step: { runId: string; key: string; seq: number; name: string; token: string; timeoutMs: number | null; waitKey: string },
): Promise<StoredTask> {
  const [task] = await db.query<StoredTask>(INSERT_TOKEN_STEP, [step.runId, step.key, step.seq, step.name, step.token, step.timeoutMs, step.waitKey]);
  return task;
}

/** The run of token $1: read without a lock (a token's run never changes), to lock that run next. */
const FIND_TOKEN_RUN = `SELECT run_id AS "runId" FROM completion_tokens WHERE token = $1`;

/** The run token `token` belongs to, or undefined when there is no such token. */
export async function findTokenRun(db: SqlExecutor, token: string): Promise<string | undefined> {
  const [row] = await db.query<{ runId: string }>(FIND_TOKEN_RUN, [token]);
  return row?.runId;
}

/**
 * Whether token $1 was used, expired, or its wait already resolved without it (timed out: a claim resolved it when
 * it came due). Read under the run's row lock (lockRunStatus), after which none of it changes until commit.
 */
const TOKEN_STATE = `SELECT c.completed_at IS NOT NULL AS used, coalesce(c.expires_at <= now(), false) AS expired,
       coalesce(t.status <> 'waiting', false) AS "waitResolved"
  FROM completion_tokens c LEFT JOIN tasks t ON t.run_id = c.run_id AND t.key = c.wait_key
 WHERE c.token = $1`;

export interface TokenState {
  used: boolean;
  expired: boolean;
  waitResolved: boolean;
}

/** The state of token `token` (see above); undefined when there is none. */
export async function tokenState(db: SqlExecutor, token: string): Promise<TokenState | undefined> {
  const [row] = await db.query<TokenState>(TOKEN_STATE, [token]);
  return row;
}

/**
 * Completes token $1 with outcome $2 (`{status, data}` or `{status, error}`): kept on the token, and, when its run
 * waits on it, its wait step resolves with it and the run becomes due now (announced on wf_runs_ready; the outbox
 * trigger publishes it in the Redis modes). The caller holds the run's row lock and found the token unused.
 */
const COMPLETE_TOKEN = `WITH token AS (
    UPDATE completion_tokens SET completed_at = now(), outcome = $2::jsonb WHERE token = $1
    RETURNING run_id, wait_key
  ), step AS (
    UPDATE tasks t SET status = 'completed', output = jsonb_build_object('timedOut', false) || $2::jsonb
      FROM token
     WHERE t.run_id = token.run_id AND t.key = token.wait_key AND t.status = 'waiting'
    RETURNING t.run_id
  ), woken AS (
    UPDATE runs r SET due_at = now(), updated_at = now()
      FROM step
     WHERE r.id = step.run_id AND r.status = 'waiting' COLLATE "C"
    RETURNING r.queue
  )
  SELECT EXISTS (SELECT 1 FROM step) AS delivered, (SELECT count(*) FROM (SELECT pg_notify('wf_runs_ready', queue) FROM woken) n)`;

/** Completes a token (see above); whether its run was waiting on it (and was woken). */
export async function completeToken(db: SqlExecutor, token: string, outcome: JsonValue): Promise<boolean> {
  const [row] = await db.query<{ delivered: boolean }>(COMPLETE_TOKEN, [token, jsonParam(outcome)]);
  return row.delivered;
}

/**
 * What the wait at step $2 of run $1 finds on its token: the outcome kept for it (null: none yet), and the
 * milliseconds left until the token expires (0: expired; null: never by itself). Under the run's row lock.
 */
const TOKEN_FOR_WAIT = `SELECT outcome,
       CASE WHEN expires_at IS NOT NULL THEN greatest(0, ceil(extract(epoch FROM expires_at - now()) * 1000))::float8 END AS "remainingMs"
  FROM completion_tokens WHERE run_id = $1 AND wait_key = $2`;

/** The token a wait step waits on (see above); undefined when none was recorded for it. */
export async function tokenForWait(
  db: SqlExecutor,
  runId: string,
  waitKey: string,
): Promise<{ outcome: JsonValue | null; remainingMs: number | null } | undefined> {
  const [row] = await db.query<{ outcome: JsonValue | null; remainingMs: number | null }>(TOKEN_FOR_WAIT, [runId, waitKey]);
  return row;
}

/**
 * Moves the wait of run $1's token from step $2 to step $3: a wait group takes the token's `result` as its branch
 * $3 (and gives it back to $2, the token's own `external:` wait, once decided), so a completion resolves the branch
 * step while the group waits (COMPLETE_TOKEN) and is refused once that step resolved (TOKEN_STATE), and a token whose
 * branch lost stays completable for a later wait, its outcome kept. Answers what the wait finds, as TOKEN_FOR_WAIT.
 * Under the run's row lock (the group's transaction), which a completion takes too, so it comes before or after.
 */
const MOVE_TOKEN_WAIT = `UPDATE completion_tokens SET wait_key = $3 WHERE run_id = $1 AND wait_key = $2
RETURNING outcome,
       CASE WHEN expires_at IS NOT NULL THEN greatest(0, ceil(extract(epoch FROM expires_at - now()) * 1000))::float8 END AS "remainingMs"`;

/** Moves a token's wait (see above); undefined when no token waits at `fromKey`. */
export async function moveTokenWait(
  db: SqlExecutor,
  runId: string,
  fromKey: string,
  toKey: string,
): Promise<{ outcome: JsonValue | null; remainingMs: number | null } | undefined> {
  const [row] = await db.query<{ outcome: JsonValue | null; remainingMs: number | null }>(MOVE_TOKEN_WAIT, [runId, fromKey, toKey]);
  return row;
}
