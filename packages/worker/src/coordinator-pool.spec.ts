import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { API } from '@nest-durable/common';
import { CoordinatorPool } from './coordinator-pool';

/** A stand-in coordinator: answers every request with `status` and its name, counting what it served. */
class FakeCoordinator {
  served = 0;
  /** Requests that arrived, answered or not. */
  received = 0;
  status = 200;
  hang = false;
  /** Sends its headers and the start of its body, then nothing more. */
  stallBody = false;
  private server: Server | undefined;

  constructor(readonly name: string) {}

  async start(port = 0): Promise<void> {
    this.server = createServer((_request, response) => {
      this.received++;
      if (this.hang) return;
      this.served++;
      response.writeHead(this.status, { 'content-type': 'application/json' });
      if (this.stallBody) return void response.write('{"name":');
      response.end(
        JSON.stringify(
          this.status === 200
            ? { name: this.name }
            : { statusCode: this.status, reason: this.status === 503 ? 'database_unavailable' : 'not_found', message: 'refused' },
        ),
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

describe('CoordinatorPool', () => {
  const started: FakeCoordinator[] = [];
  async function coordinators(...names: string[]): Promise<FakeCoordinator[]> {
    const fakes = names.map((name) => new FakeCoordinator(name));
    for (const fake of fakes) await fake.start();
    started.push(...fakes);
    return fakes;
  }
  afterEach(async () => {
    await Promise.all(started.splice(0).map((fake) => fake.stop()));
  });

  it('spreads requests over the coordinators', async () => {
    const [a, b] = await coordinators('a', 'b');
    const pool = new CoordinatorPool([a.url, b.url], {});
    for (let i = 0; i < 10; i++) await pool.request('GET', '/x');
    expect([a.served, b.served]).toEqual([5, 5]);
  });

  it('sends the request on to another coordinator when one is down, and moves back once it answers', async () => {
    const [a, b] = await coordinators('a', 'b');
    const pool = new CoordinatorPool([a.url, b.url], {});
    const port = a.port;
    await a.stop();
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await pool.request<{ name: string }>('GET', '/x'));
    expect(answers.map((answer) => answer.name)).toEqual(['b', 'b', 'b', 'b', 'b', 'b']);

    const back = new FakeCoordinator('a');
    await back.start(port);
    started.push(back);
    const deadline = Date.now() + 10_000;
    while (back.served === 0 && Date.now() < deadline) await pool.request('GET', '/x');
    expect(back.served).toBe(1);
  });

  it('treats 503 and a coordinator that does not answer in time as down, any other error as the answer', async () => {
    const [a, b] = await coordinators('a', 'b');
    const pool = new CoordinatorPool([a.url, b.url], {});
    a.status = 503;
    expect((await pool.request<{ name: string }>('GET', '/x')).name).toBe('b');
    a.status = 200;
    a.hang = true;
    const answers = [];
    for (let i = 0; i < 2; i++) answers.push((await pool.request<{ name: string }>('GET', '/x', undefined, { timeoutMs: 200 })).name);
    expect(answers).toEqual(['b', 'b']);
    a.hang = false;
    b.status = 404;
    const bFirst = new CoordinatorPool([b.url, a.url], {});
    const servedByA = a.served;
    await expect(bFirst.request('GET', '/x')).rejects.toMatchObject({ statusCode: 404, reason: 'not_found' });
    expect(a.served).toBe(servedByA);
  });

  it('treats a coordinator that stops in the middle of its answer as down', async () => {
    const [a, b] = await coordinators('a', 'b');
    const pool = new CoordinatorPool([a.url, b.url], {});
    a.stallBody = true;
    expect((await pool.request<{ name: string }>('GET', '/x', undefined, { timeoutMs: 200 })).name).toBe('b');
    expect(a.served).toBe(1);
  });

  it("ends the request when the caller's signal aborts, with its reason, trying no other coordinator", async () => {
    const [a, b] = await coordinators('a', 'b');
    const pool = new CoordinatorPool([a.url, b.url], {});
    a.hang = true;
    const controller = new AbortController();
    const request = pool.request('GET', '/x', undefined, { signal: controller.signal, timeoutMs: 10_000 });
    const deadline = Date.now() + 5_000;
    while (a.received === 0 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    controller.abort(new Error('shutting down'));
    await expect(request).rejects.toThrow('shutting down');
    expect(b.served).toBe(0);
  });

  it('fails as unreachable when its coordinator sends no answer, or stops in the middle of one, within the deadline', async () => {
    const [a] = await coordinators('a');
    const pool = new CoordinatorPool([a.url], {});
    a.hang = true;
    await expect(pool.request('GET', '/x', undefined, { timeoutMs: 200 })).rejects.toThrow('GET /x: no answer in 200 ms');
    a.hang = false;
    a.stallBody = true;
    await expect(pool.request('GET', '/y', undefined, { timeoutMs: 200 })).rejects.toThrow('GET /y: no answer in 200 ms');
  });

  it('sends every call of a pinned coordinator to that one, and fails there instead of trying another', async () => {
    const [a, b] = await coordinators('a', 'b');
    const pool = new CoordinatorPool([a.url, b.url], {});
    const pinned = pool.pinned();
    for (let i = 0; i < 3; i++) await pinned(API.live, {});
    await pool.request('GET', '/x');
    expect([a.served, b.served]).toEqual([3, 1]);
    a.status = 503;
    await expect(pinned(API.live, {})).rejects.toMatchObject({ statusCode: 503 });
    expect(b.served).toBe(1);
  });

  it('fails with the last error when no coordinator answers', async () => {
    const [a] = await coordinators('a');
    const pool = new CoordinatorPool([a.url], {});
    await a.stop();
    await expect(pool.request('GET', '/x')).rejects.toThrow(/GET \/x: ECONNREFUSED/);
  });
});
