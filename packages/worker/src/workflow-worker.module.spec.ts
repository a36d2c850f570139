import { describe, expect, it } from '@jest/globals';
import type { ClaimedRun } from '@nest-durable/common';
import { defineWorkflow } from '@nest-durable/workflow';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoordinatorApi } from './coordinator.api';
import { FailoverSubscriber } from './subscribers/failover.subscriber';
import { HttpSubscriber } from './subscribers/http.subscriber';
import { SUBSCRIBER, type Subscriber } from './subscribers/subscriber.interface';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.options';
import { WorkflowRegistry } from './workflow.registry';
import { WORKFLOW_WORKER_MODULE_OPTIONS, WorkflowWorkerModule } from './workflow-worker.module';

const echo = defineWorkflow<string, string>({ name: 'echo', version: '1', handler: async (_ctx, input) => input });

/** Stands in for @nestjs/config's ConfigService: typed values read from somewhere at start. */
@Injectable()
class AppConfig {
  private readonly values: Record<string, string> = { COORDINATOR_URL: 'http://coordinator.internal:3000', WORKER_CONCURRENCY: '4' };

  get(key: string): string {
    return this.values[key];
  }
}

@Module({ providers: [AppConfig], exports: [AppConfig] })
class AppConfigModule {}

/** What a user's broker client would be: a dependency of the custom subscriber, from the user's module. */
@Injectable()
class BrokerClient {
  readonly url = 'broker://local';
}

@Module({ providers: [BrokerClient], exports: [BrokerClient] })
class BrokerModule {}

@Injectable()
class BrokerSubscriber implements Subscriber {
  readonly name = 'broker';

  constructor(
    readonly broker: BrokerClient,
    readonly api: CoordinatorApi,
    @Inject(WORKER_OPTIONS) readonly options: ResolvedWorkerOptions,
  ) {}

  async getReadyRuns(): Promise<ClaimedRun[]> {
    return [];
  }

  getNextDelay(): number {
    return 100;
  }
}

/** Compiles a module graph without starting it (no lifecycle hooks: the consume loop does not run). */
async function compile(...imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>) {
  return Test.createTestingModule({ imports }).compile();
}

describe('WorkflowWorkerModule', () => {
  describe('forRoot', () => {
    it('keeps the options as given under its named token, and the resolved ones (defaults filled in) under WORKER_OPTIONS', async () => {
      const app = await compile(WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: 'http://127.0.0.1:3000', concurrency: 3 }));
      expect(WORKFLOW_WORKER_MODULE_OPTIONS).toBe('WORKFLOW_WORKER_MODULE_OPTIONS');
      expect(app.get(WORKFLOW_WORKER_MODULE_OPTIONS)).toEqual({ workflows: [echo], coordinatorUrl: 'http://127.0.0.1:3000', concurrency: 3 });
      expect(app.get<ResolvedWorkerOptions>(WORKER_OPTIONS)).toMatchObject({
        coordinatorUrl: 'http://127.0.0.1:3000',
        concurrency: 3,
        heartbeatIntervalMs: 30_000,
        claimWaitMs: 20_000,
        shards: [],
        // Under Jest, the entry script is Jest's, in node_modules: the project above it is this repository.
        buildId: (JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as { version: string }).version,
      });
      expect(app.get(WorkflowRegistry).refs()).toEqual([{ name: 'echo', version: '1' }]);
    });

    it('takes work over HTTP by default', async () => {
      const app = await compile(WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: 'http://127.0.0.1:3000' }));
      expect(app.get(SUBSCRIBER)).toBeInstanceOf(HttpSubscriber);
    });

    it('refuses invalid options when the app starts', async () => {
      await expect(compile(WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: 'http://127.0.0.1:3000', concurrency: 0 }))).rejects.toThrow(
        'concurrency must be a positive integer, got 0',
      );
      await expect(compile(WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: 'http://127.0.0.1:3000', concurrency: 0 }))).rejects.toMatchObject(
        {
          name: 'WorkerSetupError',
          reason: 'worker_setup_invalid',
        },
      );
      await expect(compile(WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: 'coordinator:3000' }))).rejects.toThrow(
        'coordinatorUrl must be an http(s) URL or a non-empty list of them, got "coordinator:3000"',
      );
      await expect(compile(WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: ['http://a:3000', ''] }))).rejects.toThrow(
        'coordinatorUrl must be an http(s) URL or a non-empty list of them, got ["http://a:3000",""]',
      );
      await expect(compile(WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: 'http://a:3000', buildId: 'release 7' }))).rejects.toThrow(
        `buildId must be 1-128 characters of letters, digits, '.', '_', '+' or '-', starting with a letter or digit, got "release 7"`,
      );
      await expect(compile(WorkflowWorkerModule.forRoot({ workflows: [echo], coordinatorUrl: 'http://a:3000', buildId: 'x'.repeat(129) }))).rejects.toThrow(
        'buildId must be 1-128 characters',
      );
    });

    it('uses a custom subscriber whose dependencies come from `imports`, with the HTTP subscriber as its backup', async () => {
      const app = await compile(
        WorkflowWorkerModule.forRoot({
          workflows: [echo],
          coordinatorUrl: 'http://127.0.0.1:3000',
          imports: [BrokerModule],
          subscriber: { useClass: BrokerSubscriber },
        }),
      );
      const subscriber = app.get<FailoverSubscriber>(SUBSCRIBER);
      expect(subscriber).toBeInstanceOf(FailoverSubscriber);
      expect(subscriber.primary).toBeInstanceOf(BrokerSubscriber);
      expect((subscriber.primary as BrokerSubscriber).broker.url).toBe('broker://local');
      expect((subscriber.primary as BrokerSubscriber).options.coordinatorUrl).toBe('http://127.0.0.1:3000');
    });

    it('provides its exports only to the module that imports it, unless isGlobal', async () => {
      @Injectable()
      class UsesTheWorker {
        constructor(@Inject(WORKER_OPTIONS) readonly options: ResolvedWorkerOptions) {}
      }
      @Module({ providers: [UsesTheWorker] })
      class ElsewhereModule {}

      const options = { workflows: [echo], coordinatorUrl: 'http://127.0.0.1:3000' };
      await expect(compile(WorkflowWorkerModule.forRoot(options), ElsewhereModule)).rejects.toThrow(/can't resolve dependencies of the UsesTheWorker/i);
      const app = await compile(WorkflowWorkerModule.forRoot({ ...options, isGlobal: true }), ElsewhereModule);
      expect(app.get(UsesTheWorker).options.coordinatorUrl).toBe('http://127.0.0.1:3000');
    });
  });

  describe('forRootAsync', () => {
    it('builds the options with a factory from injected configuration', async () => {
      const app = await compile(
        WorkflowWorkerModule.forRootAsync({
          imports: [AppConfigModule],
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({
            workflows: [echo],
            coordinatorUrl: config.get('COORDINATOR_URL'),
            concurrency: Number(config.get('WORKER_CONCURRENCY')),
          }),
        }),
      );
      expect(app.get<ResolvedWorkerOptions>(WORKER_OPTIONS)).toMatchObject({
        coordinatorUrl: 'http://coordinator.internal:3000',
        concurrency: 4,
        claimWaitMs: 20_000,
      });
      expect(app.get(SUBSCRIBER)).toBeInstanceOf(HttpSubscriber);
    });

    it('takes the options from a class of its own (useClass), which may inject configuration', async () => {
      @Injectable()
      class WorkerOptionsFactory {
        constructor(private readonly config: AppConfig) {}

        createWorkflowWorkerOptions() {
          return { workflows: [echo], coordinatorUrl: this.config.get('COORDINATOR_URL'), workerId: 'from-a-class' };
        }
      }
      const app = await compile(WorkflowWorkerModule.forRootAsync({ imports: [AppConfigModule], useClass: WorkerOptionsFactory }));
      expect(app.get<ResolvedWorkerOptions>(WORKER_OPTIONS)).toMatchObject({ coordinatorUrl: 'http://coordinator.internal:3000', workerId: 'from-a-class' });
    });

    it('awaits an async factory, and refuses what it returns if invalid', async () => {
      const app = await compile(
        WorkflowWorkerModule.forRootAsync({ useFactory: async () => ({ workflows: [echo], coordinatorUrl: 'http://127.0.0.1:4000' }) }),
      );
      expect(app.get<ResolvedWorkerOptions>(WORKER_OPTIONS).coordinatorUrl).toBe('http://127.0.0.1:4000');
      await expect(
        compile(
          WorkflowWorkerModule.forRootAsync({ useFactory: async () => ({ workflows: [echo], coordinatorUrl: 'http://127.0.0.1:4000', concurrency: 1.5 }) }),
        ),
      ).rejects.toThrow('concurrency must be a positive integer, got 1.5');
    });

    it('registers a custom subscriber the same way, its dependencies from the same `imports` as the factory', async () => {
      const app = await compile(
        WorkflowWorkerModule.forRootAsync({
          imports: [AppConfigModule, BrokerModule],
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({ workflows: [echo], coordinatorUrl: config.get('COORDINATOR_URL') }),
          subscriber: { useClass: BrokerSubscriber },
          isGlobal: true,
        }),
      );
      const subscriber = app.get<FailoverSubscriber>(SUBSCRIBER);
      expect(subscriber.primary).toBeInstanceOf(BrokerSubscriber);
      expect((subscriber.primary as BrokerSubscriber).options.coordinatorUrl).toBe('http://coordinator.internal:3000');
    });

    it('takes a subscriber built by a factory that injects configuration too', async () => {
      const app = await compile(
        WorkflowWorkerModule.forRootAsync({
          imports: [AppConfigModule],
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({ workflows: [echo], coordinatorUrl: config.get('COORDINATOR_URL') }),
          subscriber: {
            useFactory: (config: AppConfig, api: CoordinatorApi): Subscriber => ({
              name: `polling ${config.get('COORDINATOR_URL')}`,
              getReadyRuns: (limit, signal) => api.claim([], limit, 0, signal),
              getNextDelay: () => 1_000,
            }),
            inject: [AppConfig, CoordinatorApi],
          },
        }),
      );
      expect(app.get<FailoverSubscriber>(SUBSCRIBER).primary.name).toBe('polling http://coordinator.internal:3000');
    });
  });
});
