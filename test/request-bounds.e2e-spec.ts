import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { createTestDatabase, type TestDatabase } from './support/database';
import type { Fuzzed } from './support/http-fuzz';
import { REVISION, ROUTE_REQUESTS, type RouteName, type RouteRequest, RouteTarget, withLeaf } from './support/route-requests';

/**
 * Every integer a route takes (in its body or its query), at the edges of PostgreSQL's `integer` and beyond, in the
 * well-formed request of each route: never a 5xx (before, `expectedRevision: 2147483647` overflowed the revision the
 * write makes, `integer out of range`), a refusal is a 400 naming the field and changes nothing.
 */
const EDGES = [2 ** 31 - 1, 2 ** 31, -1, -(2 ** 31) - 1, 1e308, 1.5, 2 ** 53 + 2];
/** Values no integer field of the contract takes (each field's range lies within PostgreSQL's integer or bigint). */
const NEVER_VALID = new Set([-(2 ** 31) - 1, 1e308, 2 ** 53 + 2]);

type Path = (string | number)[];
/** JSON documents a request carries as they are (a run's input, a task's output, an event's data): not fields. */
const DOCUMENTS = new Set(['input', 'output', 'data']);

/** The paths of the numbers in a request part (the running run's revision is one, filled in when sent). */
function numbersIn(value: Fuzzed, path: Path = []): Path[] {
  if (typeof value === 'number' || value === REVISION) return [path];
  if (Array.isArray(value)) return value.flatMap((item, index) => numbersIn(item, [...path, index]));
  if (value !== null && typeof value === 'object' && value.constructor === Object) {
    return Object.entries(value).flatMap(([key, item]) => (item === undefined || DOCUMENTS.has(key) ? [] : numbersIn(item, [...path, key])));
  }
  return [];
}

/** Each integer field of a route's request: where it is (body or query) and its path there. */
function integerFields(request: RouteRequest): { part: 'body' | 'query'; path: Path }[] {
  return (['body', 'query'] as const).flatMap((part) => numbersIn((request[part] ?? null) as Fuzzed).map((path) => ({ part, path })));
}

const routes = (Object.keys(ROUTE_REQUESTS) as RouteName[]).filter((route) => integerFields(ROUTE_REQUESTS[route]).length > 0);
const REVISIONED: RouteName[] = ['heartbeat', 'recordTask', 'report', 'completeRun', 'failRun', 'suspendRun', 'startChild', 'releaseRun'];

describe('integers at the edges of their columns', () => {
  let db: TestDatabase;
  let coordinator: RunningCoordinator;
  let target: RouteTarget;

  beforeAll(async () => {
    db = await createTestDatabase('request_bounds');
    coordinator = await startCoordinator(db.url);
    target = new RouteTarget(db, coordinator.url);
    await target.createFixtures();
  });

  afterAll(async () => {
    await coordinator?.close();
    await db?.drop();
  });

  /**
   * Sends `request` to `route` and checks that it was answered below 500 and, when refused (every report of a batch
   * refused), changed nothing. Its refusals: the answer's, or a report batch's refused outcomes, as status and reason.
   */
  async function refusalsOf(route: RouteName, request: RouteRequest, what: string): Promise<{ statusCode: number; reason: string }[]> {
    const before = await target.snapshot();
    const { status, text } = await target.send({ route, request });
    expect({ what, status: status >= 500 ? `${status} ${text}` : 'below 500' }).toEqual({ what, status: 'below 500' });
    const answer = text === '' ? {} : JSON.parse(text);
    const outcomes: { ok: boolean; statusCode: number; reason: string }[] = route === 'report' && status < 400 ? answer.outcomes : [];
    const refused = status >= 400 ? [answer] : outcomes.filter((outcome) => !outcome.ok);
    if (status >= 400 || (refused.length > 0 && refused.length === outcomes.length)) {
      expect({ what, changed: await target.snapshot() }).toEqual({ what, changed: before });
    } else {
      await target.refresh();
    }
    for (const { statusCode, reason } of refused) {
      expect({ what, statusCode, reason: /^[a-z][A-Za-z0-9_]*$/.test(reason) }).toEqual({ what, statusCode: expect.any(Number), reason: true });
      expect({ what, clientError: statusCode >= 400 && statusCode < 500 }).toEqual({ what, clientError: true });
    }
    return refused.map(({ statusCode, reason }) => ({ statusCode, reason }));
  }

  it.each(routes)('%s: each integer field at 2^31-1, 2^31, -1, -2^31-1, 1e308, 1.5, 2^53+2 is answered below 500, and refused unchanged', async (route) => {
    for (const { part, path } of integerFields(ROUTE_REQUESTS[route])) {
      const field = String(path.at(-1));
      for (const edge of EDGES) {
        const request = { ...ROUTE_REQUESTS[route], [part]: withLeaf(ROUTE_REQUESTS[route][part] as Fuzzed, path, edge) };
        const what = `${route} ${part}.${path.join('.')} = ${edge}`;
        const refusals = await refusalsOf(route, request, what);
        if (NEVER_VALID.has(edge)) {
          expect({ what, refusals }).toEqual({
            what,
            refusals: expect.arrayContaining([{ statusCode: 400, reason: `invalid_${field}` }]),
          });
        }
      }
    }
  });

  it.each(REVISIONED)('%s refuses expectedRevision 2147483647 (no write can follow it) with 400 invalid_expectedRevision', async (route) => {
    const request = ROUTE_REQUESTS[route];
    const revisionPaths = integerFields(request).filter(({ path }) => path.at(-1) === 'expectedRevision');
    expect(revisionPaths.length).toBeGreaterThan(0);
    for (const { part, path } of revisionPaths) {
      const edgeRequest = { ...request, [part]: withLeaf(request[part] as Fuzzed, path, 2 ** 31 - 1) };
      const refusals = await refusalsOf(route, edgeRequest, `${route} ${path.join('.')}`);
      expect(refusals).toContainEqual({ statusCode: 400, reason: 'invalid_expectedRevision' });
    }
  });
});
