import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import request from 'supertest';
import { createWorkerApp } from '../apps/worker/src/bootstrap';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { type RunningCoordinator, startCoordinator } from './support/apps';
import { capturedLogger } from './support/captured-logs';
import { createTestDatabase, type TestDatabase } from './support/database';
import { eventually } from './support/poll';
import { PostgresServer } from './support/postgres-server';
import { AppProcess, freePort } from './support/processes';
import { RedisServer, testPrefix } from './support/redis';

const CLIENT_TOKEN = 'client-token-for-tests-0001';
const WORKER_TOKEN = 'worker-token-for-tests-0001';

/** The host's count of connections its listening sockets dropped for a full accept queue (TcpExt ListenOverflows). */
function listenOverflows(): number {
  const [names, values] = readFileSync('/proc/net/netstat', 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('TcpExt:'))
    .map((line) => line.split(' '));
  return Number(values[names.indexOf('ListenOverflows')]);
}

/** Health, metrics, authentication and shutdown, against real PostgreSQL and Redis servers the test stops and starts. */
describe('operability', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('operability');
  });

  afterAll(async () => {
    await db?.drop();
  });

  describe('authentication', () => {
    let coordinator: RunningCoordinator;

    beforeAll(async () => {
      coordinator = await startCoordinator(db.url, { authDisabled: false, clientToken: CLIENT_TOKEN, workerToken: WORKER_TOKEN });
    });

    afterAll(async () => {
      await coordinator?.close();
    });

    const runCount = async () => Number((await db.sql<{ count: string }>('SELECT count(*) FROM runs'))[0].count);

    it.each([
      ['no token', undefined],
      ['a wrong token', 'Bearer nope'],
      ['the worker token', `Bearer ${WORKER_TOKEN}`],
      ['a malformed header', CLIENT_TOKEN],
    ])('refuses a client call with %s (401, nothing written)', async (_name, authorization) => {
      const before = await runCount();
      const call = request(coordinator.url).post('/v1/runs').send({ workflow: 'echo', version: '1' });
      const response = await (authorization ? call.set('authorization', authorization) : call);
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ statusCode: 401, error: 'Unauthorized', reason: 'unauthorized' });
      expect(await runCount()).toBe(before);
    });

    it('refuses a worker call without the worker token', async () => {
      const claim = { workerId: 'w', workflows: [{ name: 'echo', version: '1' }], limit: 1 };
      await request(coordinator.url).post('/v1/worker/claims').send(claim).expect(401);
      await request(coordinator.url).post('/v1/worker/claims').set('authorization', `Bearer ${CLIENT_TOKEN}`).send(claim).expect(401);
      await request(coordinator.url).post('/v1/worker/claims').set('authorization', `Bearer ${WORKER_TOKEN}`).send(claim).expect(200);
    });

    it('accepts the client token, and leaves health, metrics and the API description open', async () => {
      await request(coordinator.url).post('/v1/runs').set('authorization', `Bearer ${CLIENT_TOKEN}`).send({ workflow: 'echo', version: '1' }).expect(201);
      await request(coordinator.url).get('/health/live').expect(200);
      await request(coordinator.url).get('/metrics').expect(200);
      const docs = await request(coordinator.url).get('/docs-json').expect(200);
      expect(docs.body.paths['/v1/runs'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/StartRunRequest' });
    });
  });

  it('queues a burst of 1,500 new connections instead of dropping any from its listen queue', async () => {
    // Workers reconnecting after a restart, or a client awaiting 1,000 results at once, open their connections
    // together; one dropped from a full accept queue waits a second for its SYN to be sent again, and on a busy host
    // the kernel may give up on it and answer its request with a reset (ECONNRESET, seen in CI at 1,010 waits).
    const coordinator = await startCoordinator(db.url);
    const sockets: Socket[] = [];
    try {
      const before = listenOverflows();
      const { port } = new URL(coordinator.url);
      // Connected in one synchronous turn: the coordinator, in this process, accepts none of them before the last.
      for (let i = 0; i < 1_500; i++) sockets.push(connect(Number(port), '127.0.0.1').on('error', () => undefined));
      await Promise.all(sockets.map((socket) => new Promise((resolve) => socket.once('connect', resolve))));
      expect(listenOverflows() - before).toBe(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      await coordinator.close();
    }
  });

  it('exposes the Prometheus series after a run', async () => {
    const redis = new RedisServer(await freePort());
    await redis.start();
    const coordinator = await startCoordinator(db.url, { dispatch: 'redis-zset', redisUrl: redis.url, redisPrefix: testPrefix('metrics') });
    try {
      const http = () => request(coordinator.url);
      const run = (await http().post('/v1/runs').send({ workflow: 'metered', version: '1' }).expect(201)).body;
      const claim = await http()
        .post('/v1/worker/claims')
        .send({ workerId: 'w', workflows: [{ name: 'metered', version: '1' }], limit: 1 })
        .expect(200);
      const revision = claim.body.runs[0].revision;
      await http()
        .post('/v1/worker/heartbeats')
        .send({ workerId: 'w', runs: [{ id: run.id, expectedRevision: revision }] })
        .expect(200);
      await http()
        .post(`/v1/worker/runs/${run.id}/complete`)
        .send({ expectedRevision: revision - 1, output: 1 })
        .expect(409);
      await http().post(`/v1/worker/runs/${run.id}/complete`).send({ expectedRevision: revision, output: 1 }).expect(200);

      const text = (await http().get('/metrics').expect(200)).text;
      expect(text).toContain('wf_runs_started_total{workflow="metered"} 1');
      expect(text).toContain('wf_runs_completed_total{workflow="metered"} 1');
      expect(text).toMatch(/wf_dispatch_latency_seconds_count 1\b/);
      expect(text).toMatch(/wf_claim_duration_seconds_count 1\b/);
      expect(text).toContain('wf_revision_conflicts_total 1');
      expect(text).toContain('wf_heartbeats_total 1');
      for (const series of [
        'wf_outbox_processed_total',
        'wf_outbox_failed_total',
        'wf_outbox_dead_lettered_total',
        'wf_outbox_in_flight',
        'wf_outbox_backlog_age_seconds',
        'wf_outbox_dead_letters',
      ]) {
        expect(text).toContain(`\n${series} `);
      }
    } finally {
      await coordinator.close();
      await redis.stop();
    }
  });

  it('a coordinator started before its PostgreSQL waits for it however long; one whose database does not exist stops at once, in one line', async () => {
    // Initialised, not running: the coordinator's first attempts find nothing listening.
    const postgres = new PostgresServer(await freePort());
    const port = await freePort();
    const start = (databaseUrl: string) =>
      new AppProcess('coordinator', 'apps/coordinator/src/main.ts', {
        DATABASE_URL: databaseUrl,
        AUTH_DISABLED: 'true',
        HOST: '127.0.0.1',
        PORT: String(port),
      });
    const waiting = start(postgres.url);
    try {
      // Past the ten attempts after which it used to give up and exit (TypeORM's default).
      await waiting.waitForOutput('Retrying (11)', 30_000);
      await postgres.start();
      await waiting.waitForOutput('listening on');
      await request(`http://127.0.0.1:${port}`).get('/health/ready').expect(200);
    } finally {
      await waiting.stop();
    }
    const missing = start(postgres.url.replace(/\/postgres$/, '/no_such_database'));
    try {
      expect(await missing.exited).toEqual({ code: 1, signal: null });
      expect(missing.output).toContain('coordinator: cannot start: database "no_such_database" does not exist');
      expect(missing.output).not.toContain('Retrying');
    } finally {
      await missing.stop();
      await postgres.destroy();
    }
  }, 90_000);

  it('coordinator readiness goes down with PostgreSQL or Redis and comes back with them', async () => {
    const postgres = new PostgresServer(await freePort());
    await postgres.start();
    const redis = new RedisServer(await freePort());
    await redis.start();
    const coordinator = await startCoordinator(postgres.url, {
      dispatch: 'redis-zset',
      redisUrl: redis.url,
      redisPrefix: testPrefix('health'),
      listenerProbeIntervalMs: 200,
    });
    const ready = () => request(coordinator.url).get('/health/ready');
    try {
      expect((await ready()).status).toBe(200);

      await redis.stop();
      const redisDown = await eventually('readiness down without Redis', async () => {
        const response = await ready();
        return response.status === 503 ? response : undefined;
      });
      expect(redisDown.body.error.redis.status).toBe('down');
      await redis.start();
      await eventually('readiness back with Redis', async () => (await ready()).status === 200, 15_000);

      await postgres.stop();
      const pgDown = await eventually('readiness down without PostgreSQL', async () => {
        const response = await ready();
        return response.status === 503 ? response : undefined;
      });
      expect(pgDown.body.error.database.status).toBe('down');
      await postgres.start();
      await eventually('readiness back with PostgreSQL', async () => (await ready()).status === 200, 20_000);
      expect((await request(coordinator.url).get('/health/live')).status).toBe(200);
    } finally {
      await coordinator.close();
      await redis.stop();
      await postgres.destroy();
    }
  }, 60_000);

  it('worker health reflects its consume loop and the coordinator, and it serves metrics', async () => {
    const coordinator = await startCoordinator(db.url);
    const config = loadWorkerConfig({ COORDINATOR_URL: coordinator.url, CLAIM_WAIT_MS: '500', WORKER_PORT: '0' });
    const worker = await createWorkerApp(config, capturedLogger);
    await worker.listen(0, '127.0.0.1');
    const workerUrl = `http://127.0.0.1:${(worker.getHttpServer().address() as AddressInfo).port}`;
    try {
      const live = await request(workerUrl).get('/health/live').expect(200);
      expect(live.body.info.consumer.status).toBe('up');
      await request(workerUrl).get('/health/ready').expect(200);
      const metrics = (await request(workerUrl).get('/metrics').expect(200)).text;
      expect(metrics).toContain('wf_worker_runs_active');
      expect(metrics).toContain('wf_worker_subscriber_failovers_total');

      await coordinator.close();
      const down = await eventually('worker readiness down without the coordinator', async () => {
        const response = await request(workerUrl).get('/health/ready');
        return response.status === 503 ? response : undefined;
      });
      expect(down.body.error.coordinator.status).toBe('down');
      // Its loop keeps going (retrying the claim), so it is still alive.
      await request(workerUrl).get('/health/live').expect(200);
    } finally {
      await worker.close();
      await coordinator.close().catch(() => undefined);
    }
  });

  it('the worker process serves its health on WORKER_HOST only', async () => {
    const coordinator = await startCoordinator(db.url);
    const port = await freePort();
    // Another loopback address: a server bound to it is not reachable on 127.0.0.1, one on 0.0.0.0 is.
    const worker = new AppProcess('worker', 'apps/worker/src/main.ts', {
      COORDINATOR_URL: coordinator.url,
      WORKER_HOST: '127.0.0.2',
      WORKER_PORT: String(port),
      LOG_FORMAT: 'json',
    });
    try {
      await worker.waitForOutput('health on');
      await request(`http://127.0.0.2:${port}`).get('/health/live').expect(200);
      await expect(request(`http://127.0.0.1:${port}`).get('/health/live')).rejects.toThrow('ECONNREFUSED');
    } finally {
      await worker.stop();
      await coordinator.close();
    }
  }, 60_000);

  it('a coordinator or worker whose port is taken prints one line and exits 1, with no stack', async () => {
    const coordinator = await startCoordinator(db.url);
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = String((taken.address() as AddressInfo).port);
    const apps = [
      new AppProcess('coordinator', 'apps/coordinator/src/main.ts', { DATABASE_URL: db.url, AUTH_DISABLED: 'true', HOST: '127.0.0.1', PORT: port }),
      new AppProcess('worker', 'apps/worker/src/main.ts', { COORDINATOR_URL: coordinator.url, WORKER_HOST: '127.0.0.1', WORKER_PORT: port }),
    ];
    try {
      for (const app of apps) {
        expect(await app.exited).toEqual({ code: 1, signal: null });
        expect(app.output).toContain(`${app.name}: cannot listen on 127.0.0.1:${port}: listen EADDRINUSE`);
        expect(app.output).not.toMatch(/^\s+at /m);
      }
    } finally {
      await Promise.all(apps.map((app) => app.stop()));
      taken.close();
      await coordinator.close();
    }
  }, 60_000);

  it('on shutdown, the coordinator ends claim long-polls at once and leaves no outbox batch in flight', async () => {
    const coordinator = await startCoordinator(db.url, { dispatch: 'redis-zset', redisPrefix: testPrefix('shutdown') });
    const polling = request(coordinator.url)
      .post('/v1/worker/claims')
      .send({ workerId: 'w', workflows: [{ name: 'nothing', version: '1' }], limit: 1, waitMs: 60_000 })
      .then((response) => response);
    await request(coordinator.url)
      .post('/v1/runs/batch')
      .send({ runs: Array.from({ length: 500 }, () => ({ workflow: 'burst', version: '1' })) })
      .expect(201);
    const started = Date.now();
    await coordinator.close();
    const response = await polling;
    expect(response.status).toBe(200);
    expect(response.body.runs).toEqual([]);
    expect(Date.now() - started).toBeLessThan(30_000);
    const inFlight = await db.sql<{ count: string }>(`SELECT count(*) FROM outbox WHERE status = 'in_flight'`);
    expect(inFlight[0].count).toBe('0');
  });
});
