import { ConfigurableModuleBuilder, Logger, Module } from '@nestjs/common';
import { TypeOrmModule, type TypeOrmModuleOptions } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { LOCK_SESSIONS } from '@app/locking';
import { AdvisoryLockSessions } from './locks/advisory-lock.sessions';
import { isConnectionLoss } from './connection-loss';
import { Database } from './database';
import type { DatabaseTarget } from './failover/database-url';
import { PrimaryLocator } from './failover/primary-locator';
import { GenericPlanPool } from './generic-plan.pool';
import { RunEntity } from './entities/run.entity';
import { TaskEntity } from './entities/task.entity';
import { migrateSchema, SCHEMA_MIGRATED } from './migration.runner';
import { InitialSchema1764500000000 } from './migrations/1764500000000-initial-schema';
import { Outbox1764600000000 } from './migrations/1764600000000-outbox';
import { RunShardAndHistoryGuard1764700000000 } from './migrations/1764700000000-run-shard-and-history-guard';
import { DueTimers1764800000000 } from './migrations/1764800000000-due-timers';
import { DispatchWakeups1764900000000 } from './migrations/1764900000000-dispatch-wakeups';
import { ClaimAttribution1765000000000 } from './migrations/1765000000000-claim-attribution';
import { WorkerRegistry1765100000000 } from './migrations/1765100000000-worker-registry';
import { Schedules1765200000000 } from './migrations/1765200000000-schedules';
import { FlowControl1765300000000 } from './migrations/1765300000000-flow-control';
import { RunTagsAndRetention1765400000000 } from './migrations/1765400000000-run-tags-and-retention';
import { DashboardFeed1765500000000 } from './migrations/1765500000000-dashboard-feed';
import { KeyRateLimits1765600000000 } from './migrations/1765600000000-key-rate-limits';
import { FlowAdmissionLock1765700000000 } from './migrations/1765700000000-flow-admission-lock';
import { WorkerDeclaredSchedules1765800000000 } from './migrations/1765800000000-worker-declared-schedules';
import { HandOff1765900000000 } from './migrations/1765900000000-hand-off';
import { StartPublishes1766000000000 } from './migrations/1766000000000-start-publishes';
import { RateDelayedRuns1766100000000 } from './migrations/1766100000000-rate-delayed-runs';
import { WorkflowInputSchemas1766200000000 } from './migrations/1766200000000-workflow-input-schemas';
import { PatchMarkers1766300000000 } from './migrations/1766300000000-patch-markers';
import { BuildIds1766400000000 } from './migrations/1766400000000-build-ids';
import { CompletionTokens1766500000000 } from './migrations/1766500000000-completion-tokens';
import { RunValues1766600000000 } from './migrations/1766600000000-run-values';
import { Updates1766700000000 } from './migrations/1766700000000-updates';
import { TraceContext1766800000000 } from './migrations/1766800000000-trace-context';
import { TaskAttemptTimes1766900000000 } from './migrations/1766900000000-task-attempt-times';
import { WaitGroups1767000000000 } from './migrations/1767000000000-wait-groups';
import {
  IdempotencyKeys1767100000000,
  IdempotencyKeysCopied1767100000001,
  IdempotencyKeysValidated1767100000002,
} from './migrations/1767100000000-idempotency-keys';
import { TransitionsKeyedByRun1767200000000 } from './migrations/1767200000000-transitions-keyed-by-run';
import { EventsAndUpdatesKeyedByRun1767300000000 } from './migrations/1767300000000-events-and-updates-keyed-by-run';
import { HistoryWithoutForeignKeys1767400000000 } from './migrations/1767400000000-history-without-foreign-keys';
import { RunsIdempotencyIndexDropped1767500000000 } from './migrations/1767500000000-runs-idempotency-index-dropped';

export const ENTITIES = [RunEntity, TaskEntity];
export const MIGRATIONS = [
  InitialSchema1764500000000,
  Outbox1764600000000,
  RunShardAndHistoryGuard1764700000000,
  DueTimers1764800000000,
  DispatchWakeups1764900000000,
  ClaimAttribution1765000000000,
  WorkerRegistry1765100000000,
  Schedules1765200000000,
  FlowControl1765300000000,
  RunTagsAndRetention1765400000000,
  DashboardFeed1765500000000,
  KeyRateLimits1765600000000,
  FlowAdmissionLock1765700000000,
  WorkerDeclaredSchedules1765800000000,
  HandOff1765900000000,
  StartPublishes1766000000000,
  RateDelayedRuns1766100000000,
  WorkflowInputSchemas1766200000000,
  PatchMarkers1766300000000,
  BuildIds1766400000000,
  CompletionTokens1766500000000,
  RunValues1766600000000,
  Updates1766700000000,
  TraceContext1766800000000,
  TaskAttemptTimes1766900000000,
  WaitGroups1767000000000,
  IdempotencyKeys1767100000000,
  IdempotencyKeysCopied1767100000001,
  IdempotencyKeysValidated1767100000002,
  TransitionsKeyedByRun1767200000000,
  EventsAndUpdatesKeyedByRun1767300000000,
  HistoryWithoutForeignKeys1767400000000,
  RunsIdempotencyIndexDropped1767500000000,
];

export interface PersistenceOptions {
  /**
   * The database, as parseDatabaseUrl reads postgres://user:password@host:port/database, or several servers (a
   * primary and its standbys) as libpq takes them:
   * postgres://user:password@host1:port1,host2:port2/database?target_session_attrs=read-write (see PrimaryLocator).
   * Parsed when the configuration loads, where a bad URL stops the start with one line.
   */
  database: DatabaseTarget;
  poolSize: number;
  /** Sessions of the GenericPlanPool (claims, takes, starts, task results and report batches), beside `poolSize`. */
  claimPoolSize: number;
  /**
   * Publisher named in every session's `wf.dispatch` setting: with one (not 'none'), the schema's
   * trigger writes an outbox row whenever a run becomes ready.
   */
  dispatch: string;
  /** application_name of every session, so the process is recognisable in pg_stat_activity. */
  applicationName: string;
}

/** How long a request waits for a free connection before it fails (503). */
const CONNECTION_TIMEOUT_MS = 10_000;
/**
 * TCP keepalive on every pooled session, first probe after this long idle: an idle session to a server that
 * vanished without closing it (a dead machine, a partition) is found dead by the kernel and dropped by its pool,
 * rather than handed to the next request. (A session with a statement in flight is not idle: see PrimaryLocator,
 * which destroys the sessions left on a former primary once it finds the new one, and docs/reliability.md.)
 */
const KEEPALIVE_IDLE_MS = 10_000;
/** Between two attempts to reach a database that is not up yet, at start. */
const CONNECT_RETRY_DELAY_MS = 1_000;

const poolLogger = new Logger('DatabasePool');

/** An idle pooled connection that dies is dropped by its pool and replaced on demand (both pools). */
function idleConnectionLost(error: Error): void {
  poolLogger.warn(`an idle PostgreSQL connection was lost (${error.message}); the pool opens a new one when needed`);
}

/** Every session's settings: the publisher in `wf.dispatch` (see PersistenceOptions). */
function sessionOptions(dispatch: string): string {
  return `-c wf.dispatch=${dispatch}`;
}

/** The options of TypeORM's DataSource, the main pool. */
function typeOrmOptions({ poolSize, dispatch, applicationName }: PersistenceOptions, primary: PrimaryLocator): TypeOrmModuleOptions {
  return {
    type: 'postgres',
    url: primary.connectionString,
    applicationName,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: false,
    synchronize: false,
    extra: {
      max: poolSize,
      connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
      options: sessionOptions(dispatch),
      Client: primary.Client,
    },
    poolErrorHandler: idleConnectionLost,
    // A database not up yet (started beside the coordinator, or replaying its WAL) is waited for, however
    // long; anything else (a wrong password, no such database) fails the start at once.
    retryAttempts: Number.POSITIVE_INFINITY,
    retryDelay: CONNECT_RETRY_DELAY_MS,
    toRetry: isConnectionLoss,
    verboseRetryLog: true,
  };
}

/** The second pool, beside the main one (see GenericPlanPool). */
function genericPlanPool({ claimPoolSize, dispatch, applicationName }: PersistenceOptions, primary: PrimaryLocator): GenericPlanPool {
  return new GenericPlanPool(
    {
      connectionString: primary.connectionString,
      Client: primary.Client,
      application_name: applicationName,
      max: claimPoolSize,
      connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
      options: sessionOptions(dispatch),
    },
    idleConnectionLost,
  );
}

/** Injection token of the PersistenceOptions given to `forRoot` or made by `forRootAsync`'s factory. */
export const PERSISTENCE_OPTIONS = Symbol('PERSISTENCE_OPTIONS');

const { ConfigurableModuleClass } = new ConfigurableModuleBuilder<PersistenceOptions>({
  moduleName: 'Persistence',
  optionsInjectionToken: PERSISTENCE_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras({}, (definition) => ({
    ...definition,
    // Global: the run store, the outbox and leader election in other modules use the one database.
    global: true,
    imports: [
      ...(definition.imports ?? []),
      TypeOrmModule.forRootAsync({ inject: [PERSISTENCE_OPTIONS, PrimaryLocator], useFactory: typeOrmOptions }),
      TypeOrmModule.forFeature(ENTITIES),
    ],
    providers: [
      ...(definition.providers ?? []),
      { provide: SCHEMA_MIGRATED, useFactory: migrateSchema, inject: [DataSource] },
      // The one locator of the primary, for every session of the process (its cache is what the sessions share).
      {
        provide: PrimaryLocator,
        useFactory: ({ database, applicationName }: PersistenceOptions) => new PrimaryLocator(database, applicationName),
        inject: [PERSISTENCE_OPTIONS],
      },
      { provide: GenericPlanPool, useFactory: genericPlanPool, inject: [PERSISTENCE_OPTIONS, PrimaryLocator] },
      Database,
      {
        provide: LOCK_SESSIONS,
        useFactory: ({ applicationName }: PersistenceOptions, primary: PrimaryLocator) => new AdvisoryLockSessions(primary, applicationName),
        inject: [PERSISTENCE_OPTIONS, PrimaryLocator],
      },
    ],
    // The options and the locator too: TypeORM's own module (global, imported above) builds its DataSource from them.
    exports: [TypeOrmModule, Database, LOCK_SESSIONS, PERSISTENCE_OPTIONS, PrimaryLocator],
  }))
  .build();

/**
 * The coordinator's PostgreSQL: TypeORM entities, migrations applied at start, and plain SQL access.
 * `forRoot(options)`, or `forRootAsync({ imports, inject, useFactory })` to build the options from configuration.
 */
@Module({})
export class PersistenceModule extends ConfigurableModuleClass {}
