import { afterEach, describe, expect, it } from '@jest/globals';
import { RedisConnection, RedisModule } from '@app/streams';
import { defineWorkflow } from '@nest-durable/workflow';
import type { ModuleMetadata } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { WorkflowWorkerModule } from '../workflow-worker.module';
import { WorkerOperationsModule } from './worker-operations.module';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const echo = defineWorkflow<string, string>({ name: 'echo', version: '1', handler: async (_ctx, input) => input });

/** A stand-in coordinator: its liveness check answers, nothing else does (the worker's claims fail and are retried). */
async function standInCoordinator(): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const live = request.url === '/health/live';
    response.writeHead(live ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(live ? { status: 'ok' } : { message: 'not here' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('WorkerOperationsModule', () => {
  let coordinator: { server: Server; url: string };
  let app: NestFastifyApplication | undefined;
  let url: string;

  afterEach(async () => {
    await app?.close();
    app = undefined;
    coordinator?.server.close();
  });

  /** Starts an app of `imports` beside a worker of the stand-in coordinator, listening on a free port. */
  async function start(imports: ModuleMetadata['imports'], { withWorker = true } = {}) {
    coordinator = await standInCoordinator();
    const worker = WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: coordinator.url, claimWaitMs: 500 });
    const compiled = await Test.createTestingModule({ imports: [...(withWorker ? [worker] : []), ...(imports ?? [])] }).compile();
    app = compiled.createNestApplication<NestFastifyApplication>(new FastifyAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  }

  const get = async (path: string) => {
    const response = await fetch(`${url}${path}`);
    return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
  };

  it('serves health and metrics at /health and /metrics by default, with the process metrics in a registry of its own', async () => {
    await start([WorkerOperationsModule.forRoot()]);
    const live = await get('/health/live');
    expect(live.status).toBe(200);
    expect(JSON.parse(live.text).info).toEqual({ consumer: { status: 'up', detail: expect.stringContaining('reading from http') } });
    const ready = await get('/health/ready');
    expect(ready.status).toBe(200);
    expect(Object.keys(JSON.parse(ready.text).info)).toEqual(['consumer', 'coordinator']);
    const metrics = await get('/metrics');
    expect(metrics.type).toBe(new Registry().contentType);
    expect(metrics.text).toContain('wf_worker_runs_active 0');
    expect(metrics.text).toContain('wf_worker_subscriber_on_backup 0');
    expect(metrics.text).toContain('wf_process_cpu_seconds_total');
  });

  it("mounts the endpoints under the app's paths, and puts the worker's series in the app's registry", async () => {
    const registry = new Registry();
    await start([WorkerOperationsModule.forRoot({ health: 'ops/health', metrics: 'ops/metrics', registry })]);
    expect((await get('/ops/health/ready')).status).toBe(200);
    expect((await get('/health/ready')).status).toBe(404);
    expect((await get('/metrics')).status).toBe(404);
    const metrics = await get('/ops/metrics');
    expect(metrics.text).toContain('wf_worker_runs_taken_total 0');
    expect(metrics.text).not.toContain('wf_process_');
    expect(await registry.metrics()).toContain('wf_worker_heartbeats_total 0');
  });

  it('takes its registry from a factory (forRootAsync), its paths beside it', async () => {
    const registry = new Registry();
    await start([WorkerOperationsModule.forRootAsync({ useFactory: async () => ({ registry }), metrics: 'ops/metrics' })]);
    expect((await get('/health/ready')).status).toBe(200);
    expect((await get('/metrics')).status).toBe(404);
    expect((await get('/ops/metrics')).text).toContain('wf_worker_runs_taken_total 0');
    expect(await registry.metrics()).toContain('wf_worker_runs_active 0');
  });

  it('mounts nothing it is told not to, and still fills the registry it is given', async () => {
    const registry = new Registry();
    await start([WorkerOperationsModule.forRoot({ health: false, metrics: false, registry })]);
    expect((await get('/health/live')).status).toBe(404);
    expect((await get('/metrics')).status).toBe(404);
    expect(await registry.metrics()).toContain('wf_worker_runs_active 0');
  });

  it('checks Redis in readiness when the app has a RedisModule', async () => {
    await start([RedisModule.forRoot({ url: REDIS_URL, prefix: 'operations-spec:' }), WorkerOperationsModule.forRoot()]);
    // Commands fail fast while the connection is still being made (no offline queue).
    const redis = app!.get(RedisConnection);
    await redis.whenReady(redis.client);
    const ready = await get('/health/ready');
    expect(ready.status).toBe(200);
    expect(Object.keys(JSON.parse(ready.text).details)).toEqual(['consumer', 'coordinator', 'redis']);
  });

  it('refuses to start in an app without a worker, saying what is missing', async () => {
    await expect(start([WorkerOperationsModule.forRoot()], { withWorker: false })).rejects.toThrow(
      'WorkerOperationsModule: this app has no worker; import WorkflowWorkerModule',
    );
  });
});
