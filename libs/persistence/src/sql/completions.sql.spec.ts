import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createSqlTestDatabase,
  holdTransaction,
  type Listener,
  listenTo,
  newRun,
  queuesWokenBefore,
  type SqlTestDatabase,
  startClaimed,
} from '../../../../test/support/sql-database';
import { completeToken, findTokenRun, insertTokenStep, tokenForWait, tokenState } from './completions.sql';
import { lockRunStatus } from './run-commands.sql';
import { lockRunningRun, suspendRun, upsertWaitingStep } from './steps.sql';

describe('completion tokens (completions.sql.ts)', () => {
  let database: SqlTestDatabase;
  let ready: Listener;
  let tokens = 0;

  beforeAll(async () => {
    database = await createSqlTestDatabase('completions_sql');
    ready = await listenTo(database.url, 'wf_runs_ready');
  });

  afterAll(async () => {
    await ready?.close();
    await database?.close();
  });

  /** A running run with a token recorded at `token:pay#1`, its wait to be `external:pay#1`. */
  async function runWithToken(workflow: string, timeoutMs: number | null = 60_000) {
    const run = newRun(workflow);
    await startClaimed(database.db, run);
    const token = `wfct_${String(++tokens).padStart(43, '0')}`;
    const step = await insertTokenStep(database.db, { runId: run.id, key: 'token:pay#1', seq: 0, name: 'pay', token, timeoutMs, waitKey: 'external:pay#1' });
    return { run, token, step };
  }

  /** The run suspended on its token's wait, as StepRepository.suspend leaves it. */
  async function waitOn(runId: string, remainingMs: number | null) {
    await upsertWaitingStep(database.db, { runId, key: 'external:pay#1', kind: 'external', seq: 1, name: 'pay', attempts: 0, delayMs: remainingMs });
    await suspendRun(database.db, runId, remainingMs);
  }

  it('insertTokenStep: the token step, completed with the token, and its row expiring after the timeout (or never)', async () => {
    const { run, token, step } = await runWithToken('tokens');
    expect(step).toEqual({ key: 'token:pay#1', kind: 'token', seq: 0, status: 'completed', attempts: 1, output: { token }, error: null });
    const never = await runWithToken('tokens-forever', null);

    const rows = await database.sql<{ token: string; wait_key: string; expires_in: number | null }>(
      `SELECT token, wait_key, round(extract(epoch FROM expires_at - created_at))::int AS expires_in FROM completion_tokens WHERE run_id IN ($1, $2) ORDER BY token`,
      [run.id, never.run.id],
    );
    expect(rows).toEqual([
      { token, wait_key: 'external:pay#1', expires_in: 60 },
      { token: never.token, wait_key: 'external:pay#1', expires_in: null },
    ]);
    expect(await findTokenRun(database.db, token)).toBe(run.id);
    expect(await findTokenRun(database.db, `wfct_${'9'.repeat(43)}`)).toBeUndefined();
  });

  it('completeToken before the run waits: kept on the token, which the wait then finds; the token is used', async () => {
    const { run, token } = await runWithToken('early');
    expect(await tokenState(database.db, token)).toEqual({ used: false, expired: false, waitResolved: false });
    expect(await tokenForWait(database.db, run.id, 'external:pay#1')).toEqual({ outcome: null, remainingMs: expect.any(Number) });

    expect(await completeToken(database.db, token, { status: 'completed', data: { paid: true } })).toBe(false);

    expect(await tokenState(database.db, token)).toEqual({ used: true, expired: false, waitResolved: false });
    expect(await tokenForWait(database.db, run.id, 'external:pay#1')).toMatchObject({ outcome: { status: 'completed', data: { paid: true } } });
    expect(await database.sql(`SELECT status FROM runs WHERE id = $1`, [run.id])).toEqual([{ status: 'running' }]);
  });

  it('completeToken of a run waiting on it: its wait resolves with the outcome and the run is due now, announced', async () => {
    const { run, token } = await runWithToken('waiting');
    await waitOn(run.id, 60_000);
    const readyBefore = (await queuesWokenBefore(database.db, ready, 'waiting-before')).length + 1;

    expect(await completeToken(database.db, token, { status: 'failed', error: { name: 'Declined', message: 'no', data: null } })).toBe(true);

    expect(await database.sql(`SELECT status, output FROM tasks WHERE run_id = $1 AND key = 'external:pay#1'`, [run.id])).toEqual([
      { status: 'completed', output: { timedOut: false, status: 'failed', error: { name: 'Declined', message: 'no', data: null } } },
    ]);
    expect(await database.sql(`SELECT status, due_at <= now() AS due FROM runs WHERE id = $1`, [run.id])).toEqual([{ status: 'waiting', due: true }]);
    expect((await queuesWokenBefore(database.db, ready, 'waiting-after')).slice(readyBefore)).toEqual(['waiting:1']);
    // The wait is resolved: a claim finds it so, and the token took its one completion.
    expect(await tokenState(database.db, token)).toEqual({ used: true, expired: false, waitResolved: true });
  });

  it('tokenState and tokenForWait: expired once its time passed; a wait resolved without the token (timed out) counts as over', async () => {
    const expired = await runWithToken('expired');
    await database.sql(`UPDATE completion_tokens SET expires_at = now() - interval '1 second' WHERE token = $1`, [expired.token]);
    expect(await tokenState(database.db, expired.token)).toEqual({ used: false, expired: true, waitResolved: false });
    expect(await tokenForWait(database.db, expired.run.id, 'external:pay#1')).toEqual({ outcome: null, remainingMs: 0 });

    const timedOut = await runWithToken('timed-out', null);
    await waitOn(timedOut.run.id, null);
    await database.sql(`UPDATE tasks SET status = 'completed', output = '{"timedOut": true}' WHERE run_id = $1 AND key = 'external:pay#1'`, [timedOut.run.id]);
    expect(await tokenState(database.db, timedOut.token)).toEqual({ used: false, expired: false, waitResolved: true });
    expect(await tokenForWait(database.db, timedOut.run.id, 'external:pay#1')).toEqual({ outcome: null, remainingMs: null });
    expect(await tokenForWait(database.db, timedOut.run.id, 'external:other#1')).toBeUndefined();
  });

  it('a completion holding the run lock: the wait locks the run after it committed, and finds its outcome', async () => {
    const { run, token } = await runWithToken('concurrent');
    const completion = await holdTransaction(database.db, async (tx) => {
      await lockRunStatus(tx, run.id);
      return completeToken(tx, token, { status: 'completed', data: 1 });
    });
    const wait = database.db.transaction(async (tx) => {
      await lockRunningRun(tx, run.id, 1);
      return tokenForWait(tx, run.id, 'external:pay#1');
    });
    await database.someoneWaitsForALock();
    await completion.commit();

    expect(completion.result).toBe(false);
    expect(await wait).toMatchObject({ outcome: { status: 'completed', data: 1 } });
  });

  it("goes with its run: delete_runs takes the run's tokens along", async () => {
    const { run, token } = await runWithToken('deleted');
    await database.sql(`UPDATE runs SET status = 'completed', finished_at = now() WHERE id = $1`, [run.id]);
    expect(await database.sql(`SELECT delete_runs(ARRAY[$1]::uuid[]) AS id`, [run.id])).toEqual([{ id: run.id }]);
    expect(await findTokenRun(database.db, token)).toBeUndefined();
  });
});
