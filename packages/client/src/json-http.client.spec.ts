import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DatabaseUnavailableError, DurableError, InvalidRequestError, RevisionConflictError, RunNotFoundError } from '@nest-durable/common';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answeredError, CoordinatorUnavailableError, isAnsweredError, isRevisionConflict, isTransient, JsonHttpClient } from './json-http.client';

describe('answers of the coordinator as errors', () => {
  /** Answers `GET /<status>?body=<text>` with that status and text. */
  let server: Server;
  let client: JsonHttpClient;

  beforeAll(async () => {
    server = createServer((request, response) => {
      const url = new URL(request.url!, 'http://localhost');
      response.writeHead(Number(url.pathname.slice(1)), { 'content-type': 'application/json' }).end(url.searchParams.get('body') ?? '');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new JsonHttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  /** What `GET /<status>` answering `body` rejects with. */
  async function refusal(status: number, body: string): Promise<unknown> {
    return client.request('GET', `/${status}?body=${encodeURIComponent(body)}`).then(
      () => expect('resolved').toBe('rejected'),
      (error: unknown) => error,
    );
  }

  it("rejects with the class the answer's reason names, keeping its status, reason and message", async () => {
    const error = await refusal(404, JSON.stringify({ statusCode: 404, error: 'Not Found', reason: 'run_not_found', message: 'run r-1 does not exist' }));
    expect(error).toBeInstanceOf(RunNotFoundError);
    expect(error).toMatchObject({ name: 'RunNotFoundError', statusCode: 404, reason: 'run_not_found', message: 'run r-1 does not exist' });
    expect(isAnsweredError(error)).toBe(true);
  });

  it('rejects with a DurableError of the reason no class carries, and of http_<status> for an answer without one', async () => {
    const unknown = await refusal(418, JSON.stringify({ statusCode: 418, error: "I'm a Teapot", reason: 'teapot', message: 'short and stout' }));
    expect([(unknown as Error).constructor, unknown]).toEqual([DurableError, expect.objectContaining({ statusCode: 418, reason: 'teapot' })]);
    const bare = await refusal(502, '');
    expect([(bare as Error).constructor, bare]).toEqual([DurableError, expect.objectContaining({ statusCode: 502, reason: 'http_502', message: 'HTTP 502' })]);
  });

  it('rejects with CoordinatorUnavailableError for an answer that is not JSON', async () => {
    const error = await refusal(502, '<html>bad gateway</html>');
    expect(error).toBeInstanceOf(CoordinatorUnavailableError);
    expect(error).toMatchObject({ reason: 'coordinator_unavailable', nonRetryable: false });
    expect(isAnsweredError(error)).toBe(false);
  });
});

describe('isTransient', () => {
  it('is true for an unreachable coordinator and for an answer of 500 or above', () => {
    expect(
      [new CoordinatorUnavailableError('ECONNREFUSED'), answeredError(500, 'internal_error', 'x'), answeredError(503, 'database_unavailable', 'x')].map(
        isTransient,
      ),
    ).toEqual([true, true, true]);
  });

  it('is false for a refusal, and for errors of this process whatever their reason', () => {
    expect(
      [
        answeredError(409, 'revision_conflict', 'stale'),
        answeredError(400, 'invalid_limit', 'x'),
        new DatabaseUnavailableError('ECONNREFUSED'),
        new Error('x'),
      ].map(isTransient),
    ).toEqual([false, false, false, false]);
  });
});

describe('isRevisionConflict', () => {
  it("is true for the coordinator's answer of a revision conflict only", () => {
    expect(isRevisionConflict(answeredError(409, 'revision_conflict', 'stale'))).toBe(true);
    expect([answeredError(409, 'run_terminal', 'x'), new RevisionConflictError('r-1', 3), new Error('revision_conflict')].map(isRevisionConflict)).toEqual([
      false,
      false,
      false,
    ]);
  });
});

describe('answeredError', () => {
  it('rebuilds an InvalidRequestError for every reason of a refused request', () => {
    for (const reason of ['invalid_run_id', 'unknown_field', 'json_too_deep', 'output_too_large']) {
      expect(answeredError(400, reason, 'x')).toBeInstanceOf(InvalidRequestError);
    }
  });
});
