import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { API } from '@nest-durable/common';
import { isAnsweredError, JsonHttpClient } from '@nest-durable/client';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { connect } from 'node:net';
import { createTestDatabase, type TestDatabase } from './support/database';
import { AppProcess, freePort } from './support/processes';
import { snapshotTables } from './support/snapshot';

/**
 * Bodies over BODY_LIMIT_BYTES get their 413 (`payload_too_large`) whoever sends them: Node's fetch and the engine's
 * own client (undici, which reads no answer until its body is written: a server that answers early and closes leaves
 * it a network error), curl, a chunked body of no announced length, and a gzip body that inflates past the limit.
 * The coordinator is a process of its own: in this one, client and server would take turns on one event loop and
 * the broken pipe would not show.
 */
const LIMIT = 1024 * 1024;
/** How much of a body the coordinator reads before it refuses it (BODY_DISCARD_FACTOR times the limit). */
const DISCARDED = 4 * LIMIT;
const run = (input: string) => ({ workflow: 'sized', version: '1', input });
/** A run start whose JSON text is about `bytes` long. */
const startOf = (bytes: number) => JSON.stringify(run('x'.repeat(bytes)));

describe('bodies over BODY_LIMIT_BYTES', () => {
  let db: TestDatabase;
  let app: AppProcess;
  const coordinator = { url: '', port: 0 };

  beforeAll(async () => {
    db = await createTestDatabase('body_limit');
    coordinator.port = await freePort();
    coordinator.url = `http://127.0.0.1:${coordinator.port}`;
    const env = { DATABASE_URL: db.url, PORT: String(coordinator.port), HOST: '127.0.0.1', AUTH_DISABLED: 'true', BODY_LIMIT_BYTES: String(LIMIT) };
    app = new AppProcess('coordinator', 'apps/coordinator/src/main.ts', env);
    await app.waitForOutput('listening on');
  });

  afterAll(async () => {
    await app?.stop();
    await db?.drop();
  });

  /** Sends `body` to start a run and expects 413 payload_too_large, with nothing written. */
  async function expectRefusedWith413(body: NonNullable<RequestInit['body']>, headers: Record<string, string> = {}): Promise<void> {
    const before = await snapshotTables(db);
    const response = await fetch(`${coordinator.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ statusCode: 413, reason: 'payload_too_large', message: expect.stringContaining('BODY_LIMIT_BYTES') });
    expect(await snapshotTables(db)).toEqual(before);
  }

  it.each([
    ['just over the limit', LIMIT + 1],
    ['twice the limit', 2 * LIMIT],
    ['just within what is read', DISCARDED - 1024],
  ])('answers fetch 413 for a JSON body %s, read and discarded (not a broken pipe)', async (_what, bytes) => {
    // Three times over: whether the pipe broke was a race.
    for (let attempt = 0; attempt < 3; attempt++) await expectRefusedWith413(startOf(bytes));
  });

  it('answers 413 at once to a body announced longer than it reads, before any of it is sent', async () => {
    const socket = connect(coordinator.port, '127.0.0.1');
    try {
      socket.write(`POST /v1/runs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${DISCARDED + 1}\r\n\r\n`);
      const head = await new Promise<string>((resolve, reject) => {
        socket.once('data', (chunk) => resolve(chunk.toString()));
        socket.once('error', reject);
      });
      expect(head).toMatch(/^HTTP\/1\.1 413 /);
      expect(head).toContain('payload_too_large');
    } finally {
      socket.destroy();
    }
  });

  it('answers fetch 413 for a chunked body of no announced length that grows past the limit', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(16 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(new TextEncoder().encode('{"workflow":"sized","version":"1","input":"')),
      pull: (controller) => {
        if (sent >= 2 * LIMIT) {
          controller.enqueue(new TextEncoder().encode('"}'));
          controller.close();
          return;
        }
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    await expectRefusedWith413(body);
  });

  it('answers 413, not 400, for a gzip body that inflates past the limit, and inflates one within it', async () => {
    await expectRefusedWith413(gzipSync(startOf(10 * LIMIT)), { 'content-encoding': 'gzip' });
    const small = await fetch(`${coordinator.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify(run('zipped'))),
    });
    expect(small.status).toBe(201);
    expect(await small.json()).toMatchObject({ workflow: 'sized', input: 'zipped' });
  });

  it('refuses a body in an encoding it does not inflate with 415 unsupported_content_encoding, and broken gzip with 400', async () => {
    const sent = (encoding: string, body: Uint8Array) =>
      fetch(`${coordinator.url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body });
    const compress = await sent('compress', new TextEncoder().encode(JSON.stringify(run('z'))));
    expect(compress.status).toBe(415);
    expect(await compress.json()).toMatchObject({ reason: 'unsupported_content_encoding' });
    const broken = await sent('gzip', new TextEncoder().encode(JSON.stringify(run('not gzip'))));
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ reason: 'invalid_content_encoding' });
  });

  it("gives the engine's client the 413 as an answered payload_too_large, not an unreachable coordinator", async () => {
    const client = new JsonHttpClient(coordinator.url);
    const refusal = await client.call(API.startRun, { body: run('x'.repeat(3 * LIMIT)) }).catch((error: unknown) => error);
    expect(isAnsweredError(refusal) && { statusCode: refusal.statusCode, reason: refusal.reason }).toEqual({ statusCode: 413, reason: 'payload_too_large' });
  });

  it('answers a URL over what Node reads of a request head (16 KiB) with 431 headers_too_large, an error body like any other', async () => {
    const response = await fetch(`${coordinator.url}/v1/runs?workflow=${'w'.repeat(20 * 1024)}`);
    expect(response.status).toBe(431);
    expect(await response.json()).toMatchObject({ statusCode: 431, reason: 'headers_too_large' });
  });

  it('answers curl 413 for a JSON body over the limit', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'body-limit-')), 'start.json');
    try {
      await writeFile(file, startOf(3 * LIMIT));
      const curl = ['-sS', '-H', 'content-type: application/json', '--data-binary', `@${file}`, '-w', '\n%{http_code}', `${coordinator.url}/v1/runs`];
      const { stdout } = await promisify(execFile)('curl', curl);
      expect(stdout.split('\n').at(-1)).toBe('413');
      expect(JSON.parse(stdout.split('\n')[0])).toMatchObject({ reason: 'payload_too_large' });
    } finally {
      await rm(dirname(file), { recursive: true, force: true });
    }
  });
});
