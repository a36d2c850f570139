import { isAnsweredError } from '@nest-durable/client';
import { type JsonValue, type RegisteredWorkflow, type WorkerRegistration } from '@nest-durable/common';
import type { WorkflowDeclaration } from '@nest-durable/workflow';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { CoordinatorApi } from './coordinator.api';
import { RegistrationGate } from './registration-gate';
import { FailoverSubscriber } from './subscribers/failover.subscriber';
import { SUBSCRIBER, type Subscriber } from './subscribers/subscriber.interface';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.options';
import { WorkerRuntime } from './worker-runtime.service';
import { WorkflowRegistry } from './workflow.registry';

/** What the registry records of each hosted workflow version, with the schedules its code declares. */
export function registeredWorkflows(registry: WorkflowRegistry): RegisteredWorkflow[] {
  const byVersion = new Map<string, RegisteredWorkflow>();
  for (const { name, version, shard } of registry.refs()) {
    const key = `${name}:${version}`;
    const { limits, retentionMs, inputSchema, updates, schedules = [] } = registry.get(name, version)!;
    const entry = byVersion.get(key) ?? {
      name,
      version,
      shards: [],
      schedules: schedules.map((schedule) => ({ ...schedule, input: schedule.input as JsonValue | undefined })),
      ...(limits ? { limits: { ...limits } } : {}),
      ...(retentionMs === undefined ? {} : { retentionMs }),
      // As JSON: a TypeBox schema's own marks are symbols, which the coordinator neither gets nor needs.
      ...(inputSchema === undefined ? {} : { inputSchema: JSON.parse(JSON.stringify(inputSchema)) as RegisteredWorkflow['inputSchema'] }),
      ...(updates === undefined ? {} : { updates: registeredUpdates(updates) }),
    };
    if (shard !== undefined) entry.shards.push(shard);
    byVersion.set(key, entry);
  }
  return [...byVersion.values()];
}

/** The updates a version declares, as registered: each name with its input schema as JSON. */
function registeredUpdates(updates: NonNullable<WorkflowDeclaration['updates']>): NonNullable<RegisteredWorkflow['updates']> {
  return Object.entries(updates).map(([name, { inputSchema }]) =>
    inputSchema === undefined ? { name } : { name, inputSchema: JSON.parse(JSON.stringify(inputSchema)) as RegisteredWorkflow['inputSchema'] },
  );
}

/**
 * Keeps this worker in the coordinators' worker registry (GET /v1/workers): registers at start and
 * then every `registrationIntervalMs`, saying what it hosts, which subscriber it reads and whether
 * that one failed over, and how busy it is. A registration that fails is tried again at the next tick:
 * the registry is for operators and declared settings, never on a run's path. A coordinator that is
 * down is logged once; one that refuses the registration (4xx: a configuration error, say a schedule
 * it cannot read) is logged at error level every time, since it stays refused until someone fixes it
 * and meanwhile nothing this worker declares (limits, retention, schedules, input schemas) is recorded.
 */
@Injectable()
export class WorkerRegistrar implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WorkerRegistrar.name);
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  /** Why the last registration failed: refused (4xx), or the coordinator unavailable; undefined once one succeeds. */
  private failing: 'refused' | 'unavailable' | undefined;
  private readonly stopping = new AbortController();

  constructor(
    private readonly api: CoordinatorApi,
    private readonly registry: WorkflowRegistry,
    private readonly runtime: WorkerRuntime,
    private readonly gate: RegistrationGate,
    @Inject(SUBSCRIBER) private readonly subscriber: Subscriber,
    @Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions,
  ) {}

  onApplicationBootstrap(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), this.options.registrationIntervalMs);
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.inFlight;
  }

  /** This worker as the registry records it now. */
  registration(): WorkerRegistration {
    const failover = this.subscriber instanceof FailoverSubscriber ? this.subscriber : undefined;
    return {
      buildId: this.options.buildId,
      subscriber: (failover?.primary ?? this.subscriber).name,
      failedOver: failover?.usingBackup ?? false,
      concurrency: this.options.concurrency,
      runsHeld: this.runtime.activeRuns,
      intervalMs: this.options.registrationIntervalMs,
      workflows: registeredWorkflows(this.registry),
    };
  }

  private tick(): void {
    // One registration at a time: a slow coordinator does not pile them up.
    if (this.inFlight) return;
    this.inFlight = this.register().finally(() => (this.inFlight = undefined));
  }

  private async register(): Promise<void> {
    try {
      await this.api.register(this.registration(), this.stopping.signal);
      this.gate.registered();
      if (this.failing) this.logger.log('registered with the coordinator again');
      this.failing = undefined;
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      if (isAnsweredError(error) && error.statusCode >= 400 && error.statusCode < 500) {
        this.logger.error(
          `the coordinator refused this worker's registration (${error.statusCode} ${error.reason}: ${error.message}); ` +
            'its declared limits, retention and schedules are not recorded until that is fixed',
        );
        this.failing = 'refused';
        return;
      }
      if (this.failing !== 'unavailable')
        this.logger.warn(`registering with the coordinator failed (${(error as Error).message}); trying again every interval`);
      this.failing = 'unavailable';
    }
  }
}
