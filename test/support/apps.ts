import type { INestApplication, INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import { createCoordinatorApp, listenCoordinator } from '../../apps/coordinator/src/bootstrap';
import { type CoordinatorConfig, loadCoordinatorConfig } from '../../apps/coordinator/src/config/coordinator.config';
import { loadWorkerConfig, type WorkerConfig } from '../../apps/worker/src/config/worker.config';
import { WorkerAppModule } from '../../apps/worker/src/worker-app.module';
import { WorkflowWorkerModule, type WorkflowWorkerModuleOptions } from '@nest-durable/worker';
import { Module } from '@nestjs/common';
import { capturedLogger } from './captured-logs';

export interface RunningCoordinator {
  app: INestApplication;
  url: string;
  close(): Promise<void>;
}

/** Boots the real coordinator app in this process, on a random port unless `port` is given. */
export async function startCoordinator(databaseUrl: string, overrides: Partial<CoordinatorConfig> = {}): Promise<RunningCoordinator> {
  const config = { ...loadCoordinatorConfig({ DATABASE_URL: databaseUrl, AUTH_DISABLED: 'true' }), port: 0, host: '127.0.0.1', ...overrides };
  const app = await createCoordinatorApp(config, capturedLogger);
  await listenCoordinator(app, config.port, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

export interface RunningWorker {
  app: INestApplicationContext;
  close(): Promise<void>;
}

/** Boots the real worker app (hosting the example workflows) in this process. */
export async function startWorker(coordinatorUrl: string, overrides: Partial<WorkerConfig> = {}): Promise<RunningWorker> {
  const config = { ...loadWorkerConfig({ COORDINATOR_URL: coordinatorUrl }), claimWaitMs: 5_000, ...overrides };
  const app = await NestFactory.createApplicationContext(WorkerAppModule.forRoot(config), { logger: capturedLogger });
  return { app, close: () => app.close() };
}

/** Boots a worker hosting the given workflows (test-only workflows beside the examples). */
export async function startCustomWorker(coordinatorUrl: string, options: Omit<WorkflowWorkerModuleOptions, 'coordinatorUrl'>): Promise<RunningWorker> {
  @Module({ imports: [WorkflowWorkerModule.forRoot({ coordinatorUrl, claimWaitMs: 5_000, ...options })] })
  class CustomWorkerModule {}
  const app = await NestFactory.createApplicationContext(CustomWorkerModule, { logger: capturedLogger });
  return { app, close: () => app.close() };
}
