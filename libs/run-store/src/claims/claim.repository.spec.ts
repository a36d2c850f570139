import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { Database, PreparedStatement } from '@app/persistence';
import { ClaimRepository, type ClaimParams } from './claim.repository';

/** The claim statement's two forms, by their prepared statements' names (claims.sql.ts, claims-full.sql.ts). */
const CLAIM_COMMON = { name: 'wf_claim_common' };
const CLAIM_FULL = { name: 'wf_claim' };

const RUN = { id: '01a23292-e466-76ce-9ad8-c86c6dd448fb', workflow: 'w', version: '1', queue: 'w:1:', revision: 1, attempt: 1, input: null, tasks: [] };
const row = (kind: string, extra: object = {}) => ({ kind, wakeup: null, readyForSeconds: 0, ...RUN, ...extra });

/** A ClaimRepository over a database whose answer to each statement is `answers[statement name]`. */
function repository(answers: Record<string, object[]>) {
  const ran: string[] = [];
  const db = {
    query: async (statement: PreparedStatement) => {
      ran.push(statement.name);
      return answers[statement.name];
    },
  };
  return { claims: new ClaimRepository(db as unknown as Database), ran };
}

const params = (...queues: string[]): ClaimParams => ({
  queues: queues.map((queue) => ({ queue, limit: 5 })),
  limit: 5,
  workerId: 'worker',
  buildId: null,
  claimMinIdleTimeMs: 30_000,
  maxStalls: 3,
});

describe('ClaimRepository: which claim statement runs', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('runs only the common statement for queues without a control or an idle claim, and returns what it took', async () => {
    const { claims, ran } = repository({ [CLAIM_COMMON.name]: [row('run'), row('requeue', { queue: 'w:1:', wakeup: 'x:1' })] });
    const result = await claims.claim(params('w:1:'));
    expect(ran).toEqual([CLAIM_COMMON.name]);
    expect(result.runs.map((run) => run.id)).toEqual([RUN.id]);
    expect(result.requeue).toEqual([{ queue: 'w:1:', wakeup: 'x:1' }]);
  });

  it('runs the full statement when the common one found a control, and returns its rows only', async () => {
    const { claims, ran } = repository({ [CLAIM_COMMON.name]: [row('controlled')], [CLAIM_FULL.name]: [row('stalled', { id: 'other' })] });
    const result = await claims.claim(params('w:1:'));
    expect(ran).toEqual([CLAIM_COMMON.name, CLAIM_FULL.name]);
    expect(result).toEqual({ runs: [], stalled: [{ id: 'other', workflow: 'w' }], requeue: [] });
  });

  it('runs the full statement when the common one found a claim gone idle, and tries the common one first again next time', async () => {
    const { claims, ran } = repository({ [CLAIM_COMMON.name]: [row('idle')], [CLAIM_FULL.name]: [row('run')] });
    const result = await claims.claim(params('w:1:'));
    expect(result.runs.map((run) => run.id)).toEqual([RUN.id]);
    await claims.claim(params('w:1:'));
    expect(ran).toEqual([CLAIM_COMMON.name, CLAIM_FULL.name, CLAIM_COMMON.name, CLAIM_FULL.name]);
  });

  it('remembers a queue set found both controlled and with a claim gone idle as controlled', async () => {
    const { claims, ran } = repository({ [CLAIM_COMMON.name]: [row('controlled'), row('idle')], [CLAIM_FULL.name]: [] });
    await claims.claim(params('w:1:'));
    await claims.claim(params('w:1:'));
    expect(ran).toEqual([CLAIM_COMMON.name, CLAIM_FULL.name, CLAIM_FULL.name]);
  });

  it('goes straight to the full statement for a queue set found controlled, for ten seconds, then tries again', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const { claims, ran } = repository({ [CLAIM_COMMON.name]: [row('controlled')], [CLAIM_FULL.name]: [] });
    await claims.claim(params('a:1:', 'b:1:'));
    await claims.claim(params('b:1:', 'a:1:')); // the same set, asked in another order
    await claims.claim(params('a:1:')); // another set
    expect(ran).toEqual([CLAIM_COMMON.name, CLAIM_FULL.name, CLAIM_FULL.name, CLAIM_COMMON.name, CLAIM_FULL.name]);
    ran.length = 0;
    jest.setSystemTime(1_000_000 + 10_001);
    await claims.claim(params('a:1:', 'b:1:'));
    expect(ran).toEqual([CLAIM_COMMON.name, CLAIM_FULL.name]);
  });
});
