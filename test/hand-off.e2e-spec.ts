import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { WaitingClaims } from '../apps/coordinator/src/hand-off/waiting-claims.service';
import { ClaimRepository } from '@app/run-store';
import { NotificationListener } from '../libs/outbox/src';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { RUN_TABLES } from '@app/persistence';

/**
 * A run started while a worker's claim long-polls this coordinator for its queue goes straight to that
 * claim, in the start's own commit, unless flow control or ready runs of the queue say it must queue.
 */
describe('handing a new run to a waiting claim', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let offers: ReturnType<typeof jest.spyOn>;
  /** The claim statement's executions. */
  let statements: ReturnType<typeof jest.spyOn>;

  beforeAll(async () => {
    db = await createTestDatabase('hand_off');
    // No poll interval in the way: a claim waits until a start or a NOTIFY ends its wait.
    coordinator = await startCoordinator(db.url, { claimPollIntervalMs: 60_000 });
    offers = jest.spyOn(coordinator.app.get(WaitingClaims), 'offer');
    statements = jest.spyOn(coordinator.app.get(ClaimRepository), 'claim');
  });

  afterEach(async () => {
    await db.sql(`TRUNCATE ${RUN_TABLES.join(', ')}, workflow_controls CASCADE`);
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);
  /** A coordinator claims are sent to, and the spy on its WaitingClaims.offer. */
  type Target = { url: string; offers: ReturnType<typeof jest.spyOn> };
  /** A claim (of echo:1 unless told) for `workerId`, waiting up to 10 s; resolves once it is waiting (offered to starts). */
  async function waitingClaim(
    workerId: string,
    { workflows = [{ name: 'echo', version: '1' }], waitMs = 10_000, on = { url: coordinator.url, offers } as Target } = {},
  ): Promise<{ answer: Promise<request.Response> }> {
    const before = on.offers.mock.calls.length;
    const answer = request(on.url)
      .post('/v1/worker/claims')
      .send({ workerId, workflows, limit: 5, waitMs })
      .then((r) => r);
    await eventually('the claim to wait', async () => on.offers.mock.calls.length > before);
    return { answer };
  }
  /** The claim's answer, once it came, which must be a 200. */
  async function claimed(claim: { answer: Promise<request.Response> }) {
    const response = await claim.answer;
    expect(response.status).toBe(200);
    return response;
  }
  /** The ids of the runs the claim answered with. */
  const claimedIds = async (claim: { answer: Promise<request.Response> }): Promise<string[]> =>
    (await claimed(claim)).body.runs.map((run: { id: string }) => run.id);
  /** Runs `work` with a second session of its own (another claimer, a limit change), ended afterwards. */
  async function withSession(work: (session: Client) => Promise<void>): Promise<void> {
    const session = new Client({ connectionString: db.url });
    await session.connect();
    try {
      await work(session);
    } finally {
      await session.end();
    }
  }
  const start = (body: Record<string, unknown> = {}) =>
    http()
      .post('/v1/runs')
      .send({ workflow: 'echo', version: '1', input: 1, ...body });
  const row = async (id: string) =>
    (
      await db.sql<{ status: string; revision: number; claimed_by: string | null; holds_slot: boolean }>(
        `SELECT status, revision, claimed_by, holds_slot FROM runs WHERE id = $1`,
        [id],
      )
    )[0];
  const transitions = (id: string) =>
    db.sql(`SELECT from_status AS "from", to_status AS "to", revision, worker_id AS worker FROM run_transitions WHERE run_id = $1 ORDER BY id`, [id]);

  it('starts the run running for the waiting claim, in one commit, with the history of a start and a claim', async () => {
    const claim = await waitingClaim('w-hand');
    const started = await start({ input: { n: 1 } }).expect(201);
    expect(started.body).toMatchObject({ status: 'running', revision: 1 });
    const { body } = await claimed(claim);
    expect(body.runs).toEqual([{ id: started.body.id, workflow: 'echo', version: '1', queue: 'echo:1', revision: 1, attempt: 1, input: { n: 1 }, tasks: [] }]);
    expect(await row(started.body.id)).toEqual({ status: 'running', revision: 1, claimed_by: 'w-hand', holds_slot: false });
    expect(await transitions(started.body.id)).toEqual([
      { from: null, to: 'queued', revision: 0, worker: null },
      { from: 'queued', to: 'running', revision: 1, worker: 'w-hand' },
    ]);
    // The worker owns it as if it had claimed it: its writes at revision 1 pass, a stale one does not.
    await http().post(`/v1/worker/runs/${started.body.id}/complete`).send({ expectedRevision: 0, output: 'x' }).expect(409);
    await http().post(`/v1/worker/runs/${started.body.id}/complete`).send({ expectedRevision: 1, output: 'done' }).expect(200);
    expect(await row(started.body.id)).toMatchObject({ status: 'completed', revision: 2 });
  });

  it("queues a paused version's run: the claim keeps waiting, and takes it once the version is resumed", async () => {
    await http().post('/v1/workflows/echo/1/pause').expect(200);
    const claim = await waitingClaim('w-paused');
    const offered = offers.mock.calls.length;
    const started = await start().expect(201);
    expect(started.body).toMatchObject({ status: 'queued', paused: true });
    // Not handed the run, the claim claimed as usual, found the version paused and waits again.
    await eventually('the claim to wait again', async () => offers.mock.calls.length > offered);
    expect((await row(started.body.id)).status).toBe('queued');
    await http().post('/v1/workflows/echo/1/resume').expect(200);
    expect(await claimedIds(claim)).toEqual([started.body.id]);
  });

  it('queues a run of a version with a concurrency limit; the claim takes it through the limit, holding a slot', async () => {
    await http().put('/v1/workflows/echo/1/limits').send({ concurrency: 1 }).expect(200);
    const claim = await waitingClaim('w-limited');
    const started = await start().expect(201);
    expect(started.body.status).toBe('queued');
    expect(await claimedIds(claim)).toEqual([started.body.id]);
    expect(await row(started.body.id)).toMatchObject({ status: 'running', claimed_by: 'w-limited', holds_slot: true });
  });

  it('queues the run while the queue has a ready run (it comes first), even one the claim could not lock', async () => {
    const earlier = await start({ priority: 5 }).expect(201);
    await withSession(async (holder) => {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [earlier.body.id]);
      const claim = await waitingClaim('w-ready'); // skips the locked run, finds nothing else, waits
      const later = await start().expect(201);
      expect(later.body.status).toBe('queued');
      // Not handed the run, the claim claims as usual and takes the one it can lock.
      expect(await claimedIds(claim)).toEqual([later.body.id]);
      await holder.query('COMMIT');
    });
  });

  /** Runs the claim statement would take before a new one: locked by `holder`, so the claim skips them and waits. */
  const FIRST_IN_LINE = {
    "a ready run of another of the claim's queues": async () =>
      (
        await http()
          .post('/v1/runs')
          .send({ workflow: 'chain', version: '1', input: { steps: 1 }, priority: 9 })
          .expect(201)
      ).body.id as string,
    'a run of the queue whose claim went idle': async () => {
      const [{ id }] = await db.sql<{ id: string }>(
        `INSERT INTO runs (id, workflow, version, queue, status, revision, claimed_by, heartbeat_at, input)
         VALUES (gen_random_uuid(), 'echo', '1', 'echo:1', 'running', 1, 'w-dead', now() - interval '1 hour', '1') RETURNING id`,
      );
      return id;
    },
  };

  it.each(Object.keys(FIRST_IN_LINE))('queues the run while there is %s (the claim would take it first)', async (what) => {
    const first = await FIRST_IN_LINE[what as keyof typeof FIRST_IN_LINE]();
    await withSession(async (holder) => {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [first]);
      const claim = await waitingClaim('w-both', {
        workflows: [
          { name: 'echo', version: '1' },
          { name: 'chain', version: '1' },
        ],
      });
      const echo = await start().expect(201);
      expect(echo.body.status).toBe('queued');
      // Not handed the run, the claim claims as usual: the only run it can lock is the new one.
      expect(await claimedIds(claim)).toEqual([echo.body.id]);
      await holder.query('ROLLBACK');
    });
  });

  it('answers a claim whose start is late at its own deadline, and gives back the run handed after it', async () => {
    await withSession(async (locker) => {
      const claim = await waitingClaim('w-late', { waitMs: 1_500 });
      // Another start of the same idempotency key, not committed yet: this start's insert waits for it.
      await locker.query('BEGIN');
      await locker.query(`INSERT INTO runs (id, workflow, version, queue, status, idempotency_key, input)
                            VALUES (gen_random_uuid(), 'echo', '1', 'echo:1', 'queued', 'k-late', '1')`);
      const starting = start({ idempotencyKey: 'k-late' }).then((r) => r);
      expect((await claimed(claim)).body.runs).toEqual([]);
      await locker.query('ROLLBACK');
      const started = await starting;
      expect(started.body).toMatchObject({ status: 'running', revision: 1 });
      await eventually('the late run to be given back', async () => {
        const now = await row(started.body.id);
        return now.status === 'queued' && now.revision === 2;
      });
    });
  });

  it('waits for a limit being set (the admission lock) and then sees it: the run goes in queued', async () => {
    await withSession(async (setter) => {
      const claim = await waitingClaim('w-race');
      // What PUT /limits does, held open: the version's admission lock, then the control row.
      await setter.query('BEGIN');
      await setter.query(`SELECT pg_advisory_xact_lock(flow_version_lock('echo', '1'))`);
      await setter.query(`INSERT INTO workflow_controls (workflow, version, api_concurrency) VALUES ('echo', '1', 1)`);
      const starting = start().then((r) => r);
      await eventually('the start to wait for the admission lock', async () => {
        const [{ n }] = await db.sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
        );
        return n > 0;
      });
      await setter.query('COMMIT');
      const started = await starting;
      expect(started.status).toBe(201);
      expect(started.body.status).toBe('queued');
      expect(await claimedIds(claim)).toEqual([started.body.id]);
      expect(await row(started.body.id)).toMatchObject({ holds_slot: true });
    });
  });

  it('hands nothing for a start whose idempotency key exists; the claim takes the next new run', async () => {
    const first = await start({ idempotencyKey: 'k-1' }).expect(201);
    await http()
      .post('/v1/worker/claims')
      .send({ workerId: 'w-first', workflows: [{ name: 'echo', version: '1' }], limit: 1, waitMs: 0 })
      .expect(200);
    const claim = await waitingClaim('w-dup');
    const offered = offers.mock.calls.length;
    const again = await start({ idempotencyKey: 'k-1' }).expect(200);
    expect(again.body).toMatchObject({ id: first.body.id, status: 'running', revision: 1 });
    expect(await row(first.body.id)).toMatchObject({ claimed_by: 'w-first' });
    await eventually('the claim to wait again', async () => offers.mock.calls.length > offered);
    const next = await start().expect(201);
    expect(next.body.status).toBe('running');
    expect(await claimedIds(claim)).toEqual([next.body.id]);
  });

  describe("the worker's next claim after a hand-off", () => {
    /** A hand-off to `workerId`'s claim; resolves with the handed run's id once the claim answered. */
    async function handOff(workerId: string, on: Target = { url: coordinator.url, offers }): Promise<string> {
      // Long enough that its re-check (what the next claim may wait for) falls after the test's timeout.
      const claim = await waitingClaim(workerId, { on, waitMs: 60_000 });
      const started = await request(on.url).post('/v1/runs').send({ workflow: 'echo', version: '1', input: 1 }).expect(201);
      expect(started.body.status).toBe('running');
      expect(await claimedIds(claim)).toEqual([started.body.id]);
      return started.body.id;
    }

    it('waits without running the claim statement (nothing was announced since), and is handed the next run', async () => {
      await handOff('w-quiet');
      const ran = statements.mock.calls.length;
      const claim = await waitingClaim('w-quiet');
      expect(statements.mock.calls.length).toBe(ran);
      const next = await start().expect(201);
      expect(next.body.status).toBe('running');
      expect(await claimedIds(claim)).toEqual([next.body.id]);
      // Another worker, or the same one for other queues, knows nothing from that hand-off: it runs the statement.
      await waitingClaim('w-other');
      await waitingClaim('w-quiet', { workflows: [{ name: 'chain', version: '1' }] });
      expect(statements.mock.calls.length).toBe(ran + 2);
      await start().expect(201);
      await start({ workflow: 'chain', input: { steps: 1 } }).expect(201);
    });

    it('runs the claim statement when a run became ready since, and takes it at once', async () => {
      await handOff('w-announced');
      // A batch start queues its run (it hands nothing over) and announces it, before the next claim comes.
      const batch = await http()
        .post('/v1/runs/batch')
        .send({ runs: [{ workflow: 'echo', version: '1', input: 2 }] })
        .expect(201);
      const ran = statements.mock.calls.length;
      const claim = http()
        .post('/v1/worker/claims')
        .send({ workerId: 'w-announced', workflows: [{ name: 'echo', version: '1' }], limit: 5, waitMs: 60_000 })
        .then((r) => r);
      // At once: a claim that waited instead would answer at its 60 s deadline, after the test's timeout.
      expect(await claimedIds({ answer: claim })).toEqual([batch.body.runs[0].id]);
      expect(statements.mock.calls.length).toBe(ran + 1);
    });

    it('answers at its own deadline when that comes first', async () => {
      await handOff('w-short');
      const answer = await http()
        .post('/v1/worker/claims')
        .send({ workerId: 'w-short', workflows: [{ name: 'echo', version: '1' }], limit: 5, waitMs: 300 })
        .expect(200);
      // (Waiting for the handed claim's re-check instead would take 60 s, past the test's timeout.)
      expect(answer.body.runs).toEqual([]);
    });

    it('runs the claim statement while the LISTEN session is down (notifications are being lost)', async () => {
      const heard = jest.spyOn(coordinator.app.get(NotificationListener), 'heard').mockReturnValue(undefined);
      try {
        await handOff('w-deaf');
        const ran = statements.mock.calls.length;
        await waitingClaim('w-deaf');
        expect(statements.mock.calls.length).toBe(ran + 1);
      } finally {
        heard.mockRestore();
      }
      await start().expect(201);
    });

    it('still re-checks for claims gone idle within CLAIM_POLL_INTERVAL_MS', async () => {
      const polling = await startCoordinator(db.url, { claimPollIntervalMs: 2_000 });
      try {
        const offered = jest.spyOn(polling.app.get(WaitingClaims), 'offer');
        const ran = jest.spyOn(polling.app.get(ClaimRepository), 'claim');
        await handOff('w-poll', { url: polling.url, offers: offered });
        // A run whose worker stopped heartbeating: nothing announces it, the re-check finds it.
        const [{ id: idle }] = await db.sql<{ id: string }>(
          `INSERT INTO runs (id, workflow, version, queue, status, revision, claimed_by, heartbeat_at, input)
           VALUES (gen_random_uuid(), 'echo', '1', 'echo:1', 'running', 1, 'w-dead', now() - interval '1 hour', '1') RETURNING id`,
        );
        const before = { offers: offered.mock.calls.length, statements: ran.mock.calls.length };
        const claim = request(polling.url)
          .post('/v1/worker/claims')
          .send({ workerId: 'w-poll', workflows: [{ name: 'echo', version: '1' }], limit: 5, waitMs: 60_000 })
          .then((r) => r);
        await eventually('the claim to wait', async () => offered.mock.calls.length > before.offers);
        expect(ran.mock.calls.length).toBe(before.statements); // it waits without having looked
        // Taken over by the re-check, long before the claim's own 60 s deadline (the test's timeout is shorter).
        expect(await claimedIds({ answer: claim })).toEqual([idle]);
        expect(ran.mock.calls.length).toBe(before.statements + 1);
      } finally {
        await polling.close();
      }
    });
  });

  describe("a Redis worker's offer (POST /v1/worker/offers)", () => {
    /** An offer of echo:1 for `workerId`; resolves once it is waiting. */
    async function waitingOffer(workerId: string, { waitMs = 10_000, offerId = randomUUID() } = {}) {
      const before = offers.mock.calls.length;
      const answer = http()
        .post('/v1/worker/offers')
        .send({ offerId, workerId, workflows: [{ name: 'echo', version: '1' }], waitMs })
        .then((r) => r);
      await eventually('the offer to wait', async () => offers.mock.calls.length > before);
      return { offerId, answer };
    }
    const withdraw = (offerId: string) => http().delete(`/v1/worker/offers/${offerId}`);

    it('is handed a run started here, and never runs the claim statement, even for a ready run', async () => {
      const ready = (
        await http()
          .post('/v1/runs/batch')
          .send({ runs: [{ workflow: 'echo', version: '1', input: 0 }] })
          .expect(201)
      ).body.runs[0].id;
      const ran = statements.mock.calls.length;
      const offer = await waitingOffer('w-offer');
      // A ready run of the queue comes first: the start queues its run, for the transport, and the offer waits on.
      expect((await start().expect(201)).body.status).toBe('queued');
      await http()
        .post('/v1/worker/claims')
        .send({ workerId: 'w-http', workflows: [{ name: 'echo', version: '1' }], limit: 5 })
        .expect(200);
      const started = await start({ input: { n: 2 } }).expect(201);
      expect(started.body).toMatchObject({ status: 'running', revision: 1 });
      expect(await claimedIds(offer)).toEqual([started.body.id]);
      expect(await row(started.body.id)).toMatchObject({ status: 'running', claimed_by: 'w-offer' });
      expect(statements.mock.calls.length).toBe(ran + 1); // the HTTP claim's, none of the offer's
      expect(await row(ready)).toMatchObject({ claimed_by: 'w-http' });
    });

    it('answers at once with nothing when withdrawn, and at its waitMs when not', async () => {
      const offer = await waitingOffer('w-withdrawn');
      await withdraw(offer.offerId).expect(204);
      expect((await claimed(offer)).body.runs).toEqual([]);
      const short = await waitingOffer('w-short-offer', { waitMs: 200 });
      expect((await claimed(short)).body.runs).toEqual([]);
      // Neither is offered to starts any more: the run queues.
      expect((await start().expect(201)).body.status).toBe('queued');
      // Answered, or never made here (a load balancer sent it elsewhere): the worker learns its offer is not here.
      expect((await withdraw(short.offerId).expect(404)).body).toMatchObject({ reason: 'offer_not_found' });
    });

    it('never strands a run: withdrawn as a start takes it, its answer carries the run, or the run was queued', async () => {
      for (let i = 0; i < 30; i++) {
        const offer = await waitingOffer(`w-race-${i}`);
        // 404 when the start's hand-off answered the offer first.
        const [started] = await Promise.all([start().expect(201), withdraw(offer.offerId).expect((r) => expect([204, 404]).toContain(r.status))]);
        const handed = await claimedIds(offer);
        const now = await row(started.body.id);
        if (now.status === 'running') expect({ handed, claimedBy: now.claimed_by }).toEqual({ handed: [started.body.id], claimedBy: `w-race-${i}` });
        else expect({ handed, status: now.status }).toEqual({ handed: [], status: 'queued' });
      }
    });

    it('is given up when its worker disconnects: a start passes it over', async () => {
      const offerId = randomUUID();
      const before = offers.mock.calls.length;
      const aborted = new AbortController();
      const answer = fetch(`${coordinator.url}/v1/worker/offers`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ offerId, workerId: 'w-gone', workflows: [{ name: 'echo', version: '1' }], waitMs: 10_000 }),
        signal: aborted.signal,
      }).catch(() => undefined);
      await eventually('the offer to wait', async () => offers.mock.calls.length > before);
      aborted.abort();
      await answer;
      await eventually('the disconnect to be seen', async () => (await start().expect(201)).body.status === 'queued');
    });

    it('answers at once when its withdrawal came first (it overtook the offer on another connection)', async () => {
      const offerId = randomUUID();
      await withdraw(offerId).expect(404);
      const answer = await http()
        .post('/v1/worker/offers')
        .send({ offerId, workerId: 'w-overtaken', workflows: [{ name: 'echo', version: '1' }], waitMs: 30_000 })
        .expect(200);
      expect(answer.body.runs).toEqual([]);
      expect((await start().expect(201)).body.status).toBe('queued');
    });

    it('refuses a second offer with the id of one waiting (409 offer_exists), leaving the first as it was', async () => {
      const offer = await waitingOffer('w-dup-offer');
      const again = await http()
        .post('/v1/worker/offers')
        .send({ offerId: offer.offerId, workerId: 'w-dup-offer', workflows: [{ name: 'echo', version: '1' }], waitMs: 1_000 })
        .expect(409);
      expect(again.body).toMatchObject({ reason: 'offer_exists' });
      const started = await start().expect(201);
      expect(await claimedIds(offer)).toEqual([started.body.id]);
    });

    it('ends when its coordinator shuts down, so the server can drain', async () => {
      const stopping = await startCoordinator(db.url, {});
      const offered = jest.spyOn(stopping.app.get(WaitingClaims), 'offer');
      const body = { workerId: 'w-stopping', workflows: [{ name: 'echo', version: '1' }], waitMs: 60_000 };
      const answer = request(stopping.url)
        .post('/v1/worker/offers')
        .send({ offerId: randomUUID(), ...body })
        .then((r) => r);
      await eventually('the offer to wait', async () => offered.mock.calls.length > 0);
      const closing = stopping.close();
      // Answered long before its 60 s (the test's timeout is shorter), so the server could drain.
      expect((await answer).body.runs).toEqual([]);
      await closing;
    });

    it('refuses a bad offer with a reason, changing nothing', async () => {
      const response = await http()
        .post('/v1/worker/offers')
        .send({ offerId: 'not-a-uuid', workerId: 'w', workflows: [{ name: 'echo', version: '1' }], waitMs: 1 })
        .expect(400);
      expect(response.body).toMatchObject({ reason: 'invalid_offerId' });
      await http().delete('/v1/worker/offers/nope').expect(400);
    });
  });
});
