import { afterAll, beforeAll, describe, it } from '@jest/globals';
import fc from 'fast-check';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import { events, type FuzzRequest, hostileWrites, queries, resolveRequest, runStarts, workerReports, workerWrites } from './support/http-fuzz';
import { everyRoute, type RouteCase, RouteTarget } from './support/route-requests';

/**
 * Property-based fuzzing of the HTTP API against the real coordinator and PostgreSQL (the requests are
 * built in support/http-fuzz.ts and, for every route, support/route-requests.ts). Whatever is sent, every
 * request gets an answer (no network error), never a 5xx, every refusal is a JSON error with a reason, a
 * refused request changes no row of any table, and no recorded step changes.
 *
 * The seed is fixed (FUZZ_SEED overrides it), so a run is repeatable; a failure prints the seed and the
 * shrunk request. Each property runs a fixed number of cases (not for a time: a slow machine runs all of
 * them, and a property cannot pass by running out of time).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20_251_201);
const RUNS_PER_PROPERTY = 50;
/** The property over every route spreads its cases over all of them (about 45): more cases, for several of each. */
const RUNS_OVER_EVERY_ROUTE = 400;

type Answer = { status: number; type: string; text: string };

describe('HTTP API under fuzzed input', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let target: RouteTarget;

  beforeAll(async () => {
    db = await createTestDatabase('http_fuzz');
    coordinator = await startCoordinator(db.url);
    target = new RouteTarget(db, coordinator.url);
    await target.createFixtures();
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  /** Sends the request with fetch, which sends the bytes as they are and no content type unless told. */
  async function sendFuzzed(fuzzed: FuzzRequest): Promise<Answer> {
    const { path, body } = resolveRequest(fuzzed, target.fixtures);
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
   * Sends the request and checks the promises: an answer, no 5xx, a JSON error with a reason, nothing changed
   * when refused, and, whatever happened, no resolved step changed (a failed one may go, for a new attempt).
   * `isReportBatch`: the answer is a worker-report batch's, whose refusals are its outcomes.
   */
  async function check(send: () => Promise<Answer>, isReportBatch: boolean): Promise<void> {
    const before = await target.snapshot();
    const stepsBefore = await steps();
    const response = await send().catch((error: Error & { cause?: { code?: string } }) => {
      throw new Error(`no answer: ${error.message} (${error.cause?.code ?? error.cause})`);
    });
    const what = `${response.status} ${response.text.slice(0, 300)}`;
    if (response.status >= 500) throw new Error(`server error: ${what}`);
    if (response.status >= 400 && !response.type.startsWith('application/json')) throw new Error(`not a JSON refusal (${response.type}): ${what}`);
    const answer = response.status >= 400 || isReportBatch ? JSON.parse(response.text) : undefined;
    const refusals: unknown[] = response.status >= 400 ? [answer] : isReportBatch ? refusedReports(answer) : [];
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
      const after = await target.snapshot();
      const changed = Object.keys(after).filter((table) => after[table] !== before[table]);
      if (changed.length > 0) throw new Error(`a refused request changed ${changed.join(', ')}: ${what}`);
    } else {
      await target.refresh();
    }
  }

  /** The outcomes of a worker-report batch, when every one of them was refused (so nothing may have changed). */
  function refusedReports(answer: { outcomes?: { ok: boolean }[] }): unknown[] {
    if (!answer.outcomes || answer.outcomes.some((outcome) => outcome.ok)) return [];
    return answer.outcomes;
  }

  function fuzz(requests: fc.Arbitrary<FuzzRequest>): Promise<void> {
    return fc.assert(
      fc.asyncProperty(requests, (fuzzed) => check(() => sendFuzzed(fuzzed), fuzzed.path[0] === '/v1/worker/reports')),
      { seed: SEED, numRuns: RUNS_PER_PROPERTY, includeErrorInReport: true },
    );
  }

  it('every route, its well-formed request with fields mutated, left out or added', () =>
    fc.assert(
      fc.asyncProperty(everyRoute, (sent: RouteCase) => check(() => target.send(sent), sent.route === 'report')),
      { seed: SEED, numRuns: RUNS_OVER_EVERY_ROUTE, includeErrorInReport: true },
    ));
  it('run-start bodies', () => fuzz(runStarts));
  it('event bodies, names and content types', () => fuzz(events));
  it('worker report batches', () => fuzz(workerReports));
  it('other worker writes: task results, outcomes, suspensions, children, claims, heartbeats, takes', () => fuzz(workerWrites));
  it('list and result queries', () => fuzz(queries));
  it('well-formed writes of a broken or hostile worker', () => fuzz(hostileWrites));
});
