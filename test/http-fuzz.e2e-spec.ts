import { afterAll, beforeAll, describe, it } from '@jest/globals';
import fc from 'fast-check';
import request from 'supertest';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { events, type Fixtures, type FuzzRequest, hostileWrites, queries, resolveRequest, runStarts, workerReports, workerWrites } from './support/http-fuzz';
import { snapshotTables } from './support/snapshot';

/**
 * Property-based fuzzing of the HTTP API against the real coordinator and PostgreSQL (the requests are
 * built in support/http-fuzz.ts). Whatever is sent, the answer is never a 5xx, every refusal is a JSON
 * error with a reason, a refused request changes no row of any table, and no recorded step changes.
 *
 * The seed is fixed (FUZZ_SEED overrides it), so a run is repeatable; a failure prints the seed and
 * the shrunk request. Each property runs for a bounded time.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_251_201);
const RUNS_PER_PROPERTY = 300;
const TIME_PER_PROPERTY_MS = 2_000;

describe('HTTP API under fuzzed input', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let fixtures: Fixtures;

  beforeAll(async () => {
    db = await createTestDatabase('http_fuzz');
    coordinator = await startCoordinator(db.url);
    fixtures = await createFixtures();
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  const http = () => request(coordinator.url);

  async function claimOne(workflow: string): Promise<{ id: string; revision: number }> {
    await http().post('/v1/runs').send({ workflow, version: '1' }).expect(201);
    const claimed = await http()
      .post('/v1/worker/claims')
      .send({ workerId: 'fixtures', workflows: [{ name: workflow, version: '1' }], limit: 1 })
      .expect(200);
    return claimed.body.runs[0];
  }

  /** A queued run, a running one with a recorded task, and one waiting for the event `approved`. */
  async function createFixtures(): Promise<Fixtures> {
    const queued = (await http().post('/v1/runs').send({ workflow: 'fuzz-queued', version: '1' }).expect(201)).body.id;
    const running = await claimOne('fuzz-running');
    await http()
      .post(`/v1/worker/runs/${running.id}/tasks`)
      .send({ expectedRevision: running.revision, key: 'charge#1', seq: 0, name: 'charge', status: 'completed', attempts: 1, output: { charged: 42 } })
      .expect(200);
    const waiting = await claimOne('fuzz-waiting');
    await http()
      .post(`/v1/worker/runs/${waiting.id}/suspend`)
      .send({ expectedRevision: waiting.revision, key: 'event:approved#1', seq: 0, kind: 'event', name: 'approved', delayMs: null })
      .expect(200);
    return { queued, running, waiting: { id: waiting.id, revision: waiting.revision + 1 } };
  }

  /** After a request that landed, the fixtures may have moved on (completed, woken, claimed): make new ones. */
  async function refreshFixtures(): Promise<void> {
    const rows = await db.sql<{ id: string; status: string; revision: number }>('SELECT id, status, revision FROM runs WHERE id = ANY($1)', [
      [fixtures.queued, fixtures.running.id, fixtures.waiting.id],
    ]);
    const state = new Map(rows.map((row) => [row.id, row]));
    const at = (id: string, status: string, revision?: number) =>
      state.get(id)?.status === status && (revision === undefined || state.get(id)?.revision === revision);
    if (
      !at(fixtures.queued, 'queued') ||
      !at(fixtures.running.id, 'running', fixtures.running.revision) ||
      !at(fixtures.waiting.id, 'waiting', fixtures.waiting.revision)
    ) {
      fixtures = await createFixtures();
    }
  }

  /** Sends the request with fetch, which sends the bytes as they are and no content type unless told. */
  async function send(fuzzed: FuzzRequest): Promise<{ status: number; type: string; text: string }> {
    const { path, body } = resolveRequest(fuzzed, fixtures);
    const response = await fetch(coordinator.url + path, {
      method: fuzzed.method,
      headers: fuzzed.contentType ? { 'content-type': fuzzed.contentType } : {},
      body: body === undefined ? undefined : Buffer.from(body),
    });
    return { status: response.status, type: response.headers.get('content-type') ?? '', text: await response.text() };
  }

  /** Every step but retry waits (which are re-armed), by run and key. */
  async function steps(): Promise<Map<string, { status: string; row: string }>> {
    const rows = await db.sql<{ id: string; status: string; row: string }>(
      `SELECT run_id || ' ' || key AS id, status, t::text AS row FROM tasks t WHERE kind <> 'retry'`,
    );
    return new Map(rows.map(({ id, status, row }) => [id, { status, row }]));
  }

  /**
   * Sends the request and checks the promises: no 5xx, a JSON error with a reason, nothing changed when
   * refused, and, whatever happened, no resolved step changed (a failed one may go, for a new attempt).
   */
  async function check(fuzzed: FuzzRequest): Promise<void> {
    const before = await snapshotTables(db);
    const stepsBefore = await steps();
    const response = await send(fuzzed);
    const what = `${response.status} ${response.text.slice(0, 300)}`;
    if (response.status >= 500) throw new Error(`server error: ${what}`);
    if (!response.type.startsWith('application/json')) throw new Error(`not a JSON answer (${response.type}): ${what}`);
    const answer = JSON.parse(response.text);
    const refusals: unknown[] = response.status >= 400 ? [answer] : refusedReports(fuzzed, answer);
    for (const refusal of refusals) {
      const { statusCode, reason, message } = refusal as Record<string, unknown>;
      const expectedStatus = response.status >= 400 ? response.status : undefined;
      if (typeof statusCode !== 'number' || statusCode < 400 || statusCode >= 500 || (expectedStatus !== undefined && statusCode !== expectedStatus)) {
        throw new Error(`error without a matching 4xx statusCode: ${what}`);
      }
      if (typeof reason !== 'string' || !/^[a-z][A-Za-z0-9_]*$/.test(reason)) throw new Error(`error without a machine-readable reason: ${what}`);
      if (typeof message !== 'string' || message.length === 0) throw new Error(`error without a message: ${what}`);
    }
    const stepsAfter = await steps();
    for (const [id, step] of stepsBefore) {
      if (step.status === 'waiting') continue;
      const now = stepsAfter.get(id);
      if (now ? now.row !== step.row : step.status !== 'failed')
        throw new Error(`recorded step ${id} changed from ${step.row} to ${now?.row ?? 'nothing'}: ${what}`);
    }
    if (refusals.length > 0) {
      const after = await snapshotTables(db);
      const changed = Object.keys(after).filter((table) => after[table] !== before[table]);
      if (changed.length > 0) throw new Error(`a refused request changed ${changed.join(', ')}: ${what}`);
    } else {
      await refreshFixtures();
    }
  }

  /** The outcomes of a worker-report batch, when every one of them was refused (so nothing may have changed). */
  function refusedReports(fuzzed: FuzzRequest, answer: { outcomes?: { ok: boolean }[] }): unknown[] {
    if (fuzzed.path[0] !== '/v1/worker/reports' || !answer.outcomes || answer.outcomes.some((outcome) => outcome.ok)) return [];
    return answer.outcomes;
  }

  async function fuzz(requests: fc.Arbitrary<FuzzRequest>): Promise<void> {
    // The time limit interrupts the property but not the request in flight: it must end before the next
    // property takes its snapshots.
    let inFlight: Promise<void> = Promise.resolve();
    try {
      await fc.assert(
        fc.asyncProperty(requests, (fuzzed) => (inFlight = check(fuzzed))),
        { seed: SEED, numRuns: RUNS_PER_PROPERTY, includeErrorInReport: true, plugins: [fc.interruptAfterTimeLimit(TIME_PER_PROPERTY_MS)] },
      );
    } finally {
      await inFlight.catch(() => undefined);
    }
  }

  it('run-start bodies', () => fuzz(runStarts));
  it('event bodies, names and content types', () => fuzz(events));
  it('worker report batches', () => fuzz(workerReports));
  it('other worker writes: task results, outcomes, suspensions, children, claims, heartbeats, takes', () => fuzz(workerWrites));
  it('list and result queries', () => fuzz(queries));
  it('well-formed writes of a broken or hostile worker', () => fuzz(hostileWrites));
});
