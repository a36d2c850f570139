import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { AppProcess, freePort } from '../../test/support/processes';
import type { PostgresServer } from '../../test/support/postgres-server';
import { RedisServer } from '../../test/support/redis';
import { ReplicatedPostgres } from '../../test/support/replicated-postgres';
import { type Mode, TIMING } from './options';
import { describeExit, type Violations, type Watchdog } from './violations';

/** The soak's own PostgreSQL (a primary with a synchronous standby) and Redis servers, which it crashes and restarts. */
export class Servers {
  postgres: ReplicatedPostgres | undefined;
  redis: RedisServer | undefined;

  constructor(readonly watchdog: Watchdog) {}

  async startPostgres(): Promise<ReplicatedPostgres> {
    // Lock waits over deadlock_timeout (1 s) and every deadlock are logged, for the summary and the evidence.
    this.postgres = await ReplicatedPostgres.start({ log_lock_waits: 'on', max_connections: '200' });
    for (const node of this.postgres.nodes) this.watch('PostgreSQL', node);
    return this.postgres;
  }

  /** Before a mode: the node a failover left dead becomes the primary's synchronous standby again (the primary stops for the copy). */
  async replicatePostgres(): Promise<void> {
    const postgres = this.postgres!;
    if (postgres.replicating) return;
    this.watchdog.expect(postgres.primary.exited);
    await postgres.attachStandby();
    for (const node of postgres.nodes) this.watch('PostgreSQL', node);
  }

  /** `kill -9` of the primary and promotion of its standby (see ReplicatedPostgres.failover). */
  async failoverPostgres(): Promise<void> {
    const postgres = this.postgres!;
    this.watchdog.expect(postgres.primary.exited);
    await postgres.failover();
  }

  async startRedis(): Promise<RedisServer> {
    this.redis ??= new RedisServer(await freePort());
    if (!this.redis.alive) await this.startWatched('redis-server', this.redis);
    return this.redis;
  }

  /** `pg_ctl restart -m immediate` of the primary: SIGQUIT, then a start that runs crash recovery. */
  async crashPostgres(): Promise<void> {
    const postgres = this.postgres!.primary;
    this.watchdog.expect(postgres.exited);
    await postgres.crash();
    await this.startWatched('PostgreSQL', postgres);
  }

  /** SIGKILL, `downMs` without Redis (workers fail over to HTTP), then a start on the same port: Redis comes back empty. */
  async restartRedis(downMs: number): Promise<void> {
    const redis = this.redis!;
    this.watchdog.expect(redis.exited);
    await redis.stop();
    await delay(downMs);
    await this.startWatched('redis-server', redis);
  }

  async stop(): Promise<void> {
    if (this.redis?.alive) this.watchdog.expect(this.redis.exited);
    for (const node of this.postgres?.nodes ?? []) if (node.alive) this.watchdog.expect(node.exited);
    await this.redis?.stop();
    await this.postgres?.destroy();
  }

  private async startWatched(name: string, server: PostgresServer | RedisServer): Promise<void> {
    await server.start();
    this.watch(name, server);
  }

  /** An exit of `server` the soak did not cause is a violation, and the server is started again. */
  private watch(name: string, server: PostgresServer | RedisServer): void {
    this.watchdog.watch(
      name,
      server.exited,
      () => server.output,
      () => this.startWatched(name, server),
    );
  }
}

export const TOKENS = { client: `soak-client-${randomBytes(12).toString('hex')}`, worker: `soak-worker-${randomBytes(12).toString('hex')}` };

const DISPATCH: Record<Mode, string> = { http: 'none', 'redis-zset': 'redis-zset', 'redis-streams': 'redis-streams' };

/** One mode's coordinator and workers, as real processes, replaced when they die. */
export class ModeCluster {
  coordinator: AppProcess | undefined;
  readonly workers = new Map<string, AppProcess>();
  /** Every process this mode started, for the evidence. */
  readonly processes: AppProcess[] = [];
  /** When each worker was ready, and when it ended. */
  readonly lifetimes = new Map<string, { from: number; to?: number }>();
  private workerCount = 0;
  private coordinatorCount = 0;
  private coordinatorStarted: Promise<void> = Promise.resolve();
  readonly redisPrefix: string;
  private readonly coordinatorEnv: Record<string, string>;
  private readonly workerEnv: Record<string, string>;

  constructor(
    readonly mode: Mode,
    readonly coordinatorUrl: string,
    config: { port: number; databaseUrl: string; redisUrl: string; journalDir: string; concurrency: number },
    private readonly watchdog: Watchdog,
    private readonly violations: Violations,
  ) {
    this.redisPrefix = `soak:${mode}:`;
    const common = {
      HEARTBEAT_INTERVAL_MS: String(TIMING.heartbeatIntervalMs),
      CLAIM_MIN_IDLE_TIME_MS: String(TIMING.claimMinIdleTimeMs),
      STREAM_RECLAIM_IDLE_MS: String(TIMING.claimMinIdleTimeMs),
      REDIS_URL: config.redisUrl,
      REDIS_PREFIX: this.redisPrefix,
      WORKER_TOKEN: TOKENS.worker,
      LOG_FORMAT: 'json',
    };
    this.coordinatorEnv = {
      ...common,
      DATABASE_URL: config.databaseUrl,
      PORT: String(config.port),
      HOST: '127.0.0.1',
      CLIENT_TOKEN: TOKENS.client,
      DISPATCH: DISPATCH[mode],
      CLAIM_POLL_INTERVAL_MS: '200',
      LISTENER_PROBE_INTERVAL_MS: '1000',
      LEADER_CHECK_INTERVAL_MS: '500',
      OUTBOX_POLL_INTERVAL_MS: '250',
      OUTBOX_RETRY_MAX_MS: '2000',
      REPUBLISH_INTERVAL_MS: '1000',
      REPUBLISH_AFTER_MS: '3000',
      // The soak kills the workers that hold runs, again and again: a long run outlives several of them
      // without being a run that kills its workers, so the stall limit must not end it.
      MAX_STALLS: '50',
      OUTBOX_STALE_IN_FLIGHT_MS: '3000',
    };
    this.workerEnv = {
      ...common,
      COORDINATOR_URL: coordinatorUrl,
      SUBSCRIBER: mode,
      WORKER_CONCURRENCY: String(config.concurrency),
      CLAIM_WAIT_MS: '2000',
      SHUTDOWN_GRACE_MS: '1000',
      MAX_DELIVERIES: '50', // as MAX_STALLS on the coordinator
      REDIS_BLOCK_MS: '1000',
      SOAK_JOURNAL_DIR: config.journalDir,
    };
  }

  startCoordinator(): Promise<void> {
    const coordinator = new AppProcess(`${this.mode}-coordinator-${++this.coordinatorCount}`, 'apps/coordinator/src/main.ts', this.coordinatorEnv);
    this.processes.push(coordinator);
    this.coordinator = coordinator;
    this.watchdog.watch(
      coordinator.name,
      coordinator.exited,
      () => coordinator.output,
      () => this.startCoordinator(),
    );
    this.coordinatorStarted = coordinator.waitForOutput('listening on', 60_000);
    return this.coordinatorStarted;
  }

  /** Kills the coordinator once it is up (one that is starting, say after a crash, is waited for). */
  async killCoordinator(): Promise<void> {
    await this.coordinatorStarted.catch(() => undefined);
    const coordinator = this.coordinator!;
    this.watchdog.expect(coordinator.exited);
    coordinator.signal('SIGKILL');
    await coordinator.exited;
    await this.startCoordinator();
  }

  async startWorker(): Promise<AppProcess> {
    const id = `${this.mode}-w${++this.workerCount}`;
    const worker = new AppProcess(id, 'test/fixtures/fault-worker.main.ts', { ...this.workerEnv, WORKER_ID: id });
    this.processes.push(worker);
    this.workers.set(id, worker);
    this.watchdog.watch(
      id,
      worker.exited,
      () => worker.output,
      async () => {
        this.workers.delete(id);
        await this.startWorker();
      },
    );
    await worker.waitForOutput(`ready ${id}`, 60_000);
    const lifetime: { from: number; to?: number } = { from: Date.now() };
    this.lifetimes.set(id, lifetime);
    void worker.exited.then(() => (lifetime.to = Date.now()));
    return worker;
  }

  /** kill -9, and a replacement at once. */
  async killWorker(victim: AppProcess): Promise<void> {
    this.watchdog.expect(victim.exited);
    this.workers.delete(victim.name);
    victim.signal('SIGKILL');
    await victim.exited;
    await this.startWorker();
  }

  /** SIGTERM to everyone (workers first, so they can release their runs), and checks that each stopped cleanly. */
  async stop(): Promise<void> {
    const stopping = [...this.workers.values(), ...(this.coordinator?.alive ? [this.coordinator] : [])];
    for (const app of stopping) this.watchdog.expect(app.exited);
    await Promise.all([...this.workers.values()].map((worker) => this.stopCleanly(worker)));
    if (this.coordinator) await this.stopCleanly(this.coordinator);
    this.workers.clear();
  }

  private async stopCleanly(app: AppProcess): Promise<void> {
    if (!app.alive) return;
    const started = Date.now();
    await app.stop(20_000);
    const exit = await app.exited;
    // Nest re-raises the signal after its shutdown hooks: SIGTERM (or exit code 0) is a clean stop.
    if (exit.signal === 'SIGTERM' || exit.code === 0) return;
    this.violations.add('stops cleanly on SIGTERM', `${app.name} ${describeExit(exit)} ${Date.now() - started} ms after SIGTERM`, [app.output.slice(-4000)]);
  }
}
