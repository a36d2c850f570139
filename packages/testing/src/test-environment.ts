import { type CoordinatorConfig, createCoordinatorApp, DueTimers, listenCoordinator, loadCoordinatorConfig } from '@app/coordinator';
import { WorkflowClient } from '@nest-durable/client';
import { WorkflowWorkerModule, type WorkflowWorkerOptions } from '@nest-durable/worker';
import { ConsoleLogger, type INestApplication, type LoggerService, type LogLevel, type ModuleMetadata } from '@nestjs/common';
import { Test, type TestingModule, type TestingModuleBuilder } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import { TestClock } from './test-clock';
import { createThrowawayDatabase, type ThrowawayDatabase } from './throwaway-database';

export interface TestEnvironmentOptions {
  /** The worker's modules: e.g. your worker module, or the modules of your `@Workflow` classes and their services. */
  imports?: ModuleMetadata['imports'];
  /** Providers beside them: `@Workflow` classes and the services they inject. */
  providers?: ModuleMetadata['providers'];
  /**
   * Changes the worker's testing module before it compiles: `(builder) => builder.overrideProvider(Mailer).useValue(fake)`.
   * Whatever it returns is ignored (Nest's overrides change the builder they are called on).
   */
  override?: (builder: TestingModuleBuilder) => unknown;
  /** The worker's options (WorkflowWorkerModule.forRoot's) besides the coordinator's address: `workflows`, `concurrency`, … */
  worker?: Omit<Partial<WorkflowWorkerOptions>, 'coordinatorUrl'>;
  /** The coordinator's settings over its defaults (its environment, parsed), e.g. `{ maxStalls: 0 }`. */
  coordinator?: Partial<CoordinatorConfig>;
  /**
   * The PostgreSQL server to create the throwaway database on. Default: `DATABASE_URL`; without it an embedded
   * server is started (and stopped by `close`).
   */
  databaseUrl?: string;
  /** How long `skipTime` waits for the engine to hand on what came due before it fails naming the runs. Default 10 s. */
  settleTimeoutMs?: number;
  /** The apps' logger, or the levels Nest's console logger prints (none: `[]`). Default warnings and errors. */
  logger?: LoggerService | LogLevel[];
}

export interface TestEnvironment {
  /** A client of the environment's coordinator: `env.client.start(MyWorkflow, input)`, typed by the class. */
  client: WorkflowClient;
  /** The coordinator's base URL (for plain HTTP, `wf`, or another client). */
  coordinatorUrl: string;
  /** The throwaway database (for assertions on the engine's tables; its now() is the test clock). */
  databaseUrl: string;
  /** The worker's testing module: `env.worker.get(MyService)` gets the instance the workflows were given. */
  worker: TestingModule;
  /**
   * Moves the engine's clock `ms` forward: sleeps, `runAt`, retry waits, event and child timeouts and schedules that
   * fall due meanwhile fire at once, in order, each handed on (its run taken and run until it waits or ends) before
   * the next. Resolves when the whole window has passed. Real time runs on as well.
   */
  skipTime(ms: number): Promise<void>;
  /** The engine's clock now: real time plus every skip (what to add to for a `runAt`). */
  now(): Promise<Date>;
  /** Stops the worker, the coordinator, and drops the database (and stops the embedded server if one was started). */
  close(): Promise<void>;
}

/** What a test environment sets differently from a deployment's defaults, and why. */
const TEST_WORKER_DEFAULTS: Omit<Partial<WorkflowWorkerOptions>, 'coordinatorUrl'> = {
  workerId: 'test-worker',
  // Every retry wait goes through the coordinator's clock, so skipTime can pass it (in process it would be real time).
  inProcessRetryMaxMs: 0,
  // Stopping a test's worker does not wait for runs that a test left running.
  shutdownGraceMs: 1_000,
};

/**
 * A real coordinator and a real worker in the test's own process, on a database of their own whose clock the test
 * moves forward (`skipTime`). No test-framework global is used: it runs under Jest, Vitest or any runner.
 *
 * ```ts
 * const env = await createTestEnvironment({ providers: [AccountsService, WelcomeWorkflow],
 *   override: (builder) => builder.overrideProvider(AccountsService).useValue(fakeAccounts) });
 * const run = await env.client.start(WelcomeWorkflow, { email: 'a@example.com' });
 * await env.skipTime(7 * 24 * 3_600_000);
 * const done = await env.client.waitForResult(run);
 * await env.close();
 * ```
 */
export async function createTestEnvironment(options: TestEnvironmentOptions = {}): Promise<TestEnvironment> {
  const logger = options.logger ?? (['error', 'warn'] as LogLevel[]);
  const database = await createThrowawayDatabase(options.databaseUrl ?? process.env.DATABASE_URL);
  const opened: { close(): Promise<unknown> }[] = [{ close: () => database.drop() }];
  const closeAll = async () => {
    for (const part of opened.reverse()) await part.close();
  };
  try {
    const clock = await TestClock.install(database.url, options.settleTimeoutMs ?? 10_000);
    opened.push(clock);
    const coordinator = await startCoordinator(database, logger, options.coordinator);
    opened.push(coordinator);
    const coordinatorUrl = `http://127.0.0.1:${(coordinator.getHttpServer().address() as AddressInfo).port}`;
    const worker = await startWorker(coordinatorUrl, options, logger);
    opened.push(worker);
    const timers = coordinator.get(DueTimers);
    let closed: Promise<void> | undefined;
    return {
      client: new WorkflowClient({ url: coordinatorUrl }),
      coordinatorUrl,
      databaseUrl: database.url,
      worker,
      skipTime: (ms) => clock.skip(ms, timers),
      now: async () => new Date(await clock.now()),
      close: () => (closed ??= closeAll()),
    };
  } catch (error) {
    await closeAll().catch(() => undefined);
    throw error;
  }
}

async function startCoordinator(
  database: ThrowawayDatabase,
  logger: LoggerService | LogLevel[],
  overrides: Partial<CoordinatorConfig> = {},
): Promise<INestApplication> {
  const config: CoordinatorConfig = {
    ...loadCoordinatorConfig({ DATABASE_URL: database.url, AUTH_DISABLED: 'true' }),
    port: 0,
    host: '127.0.0.1',
    // Finished runs stay for the test to read, however far it skips.
    runRetentionMs: 0,
    ...overrides,
  };
  const app = await createCoordinatorApp(config, logger);
  await listenCoordinator(app, config.port, config.host);
  return app;
}

async function startWorker(coordinatorUrl: string, options: TestEnvironmentOptions, logger: LoggerService | LogLevel[]): Promise<TestingModule> {
  const builder = Test.createTestingModule({
    imports: [WorkflowWorkerModule.forRoot({ ...TEST_WORKER_DEFAULTS, ...options.worker, coordinatorUrl }), ...(options.imports ?? [])],
    providers: options.providers ?? [],
  });
  options.override?.(builder);
  const worker = await builder.setLogger(Array.isArray(logger) ? new ConsoleLogger({ logLevels: logger }) : logger).compile();
  await worker.init();
  return worker;
}
