import { DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Database } from './database';
import { RunTransitionEntity } from './entities/run-transition.entity';
import { RunEntity } from './entities/run.entity';
import { TaskEntity } from './entities/task.entity';
import { MigrationRunner } from './migration.runner';
import { InitialSchema1764500000000 } from './migrations/1764500000000-initial-schema';
import { Outbox1764600000000 } from './migrations/1764600000000-outbox';
import { DueTimers1764800000000 } from './migrations/1764800000000-due-timers';

export const ENTITIES = [RunEntity, TaskEntity, RunTransitionEntity];
export const MIGRATIONS = [InitialSchema1764500000000, Outbox1764600000000, DueTimers1764800000000];

export interface PersistenceOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  poolSize: number;
  /**
   * Publisher named in every session's `wf.dispatch` setting: with one (not 'none'), the schema's
   * trigger writes an outbox row whenever a run becomes ready.
   */
  dispatch: string;
}

export interface PersistenceAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  useFactory: (...args: any[]) => PersistenceOptions | Promise<PersistenceOptions>;
  inject?: (string | symbol | Function)[];
}

/** The coordinator's PostgreSQL: TypeORM entities, migrations applied at start, and plain SQL access. */
@Module({})
export class PersistenceModule {
  static forRootAsync(options: PersistenceAsyncOptions): DynamicModule {
    return {
      module: PersistenceModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({
          imports: options.imports,
          inject: options.inject,
          useFactory: async (...args: unknown[]) => {
            const { url, poolSize, dispatch } = await options.useFactory(...args);
            return {
              type: 'postgres' as const,
              url,
              entities: ENTITIES,
              migrations: MIGRATIONS,
              migrationsRun: false,
              synchronize: false,
              extra: { max: poolSize, connectionTimeoutMillis: 10_000, options: `-c wf.dispatch=${dispatch}` },
            };
          },
        }),
        TypeOrmModule.forFeature(ENTITIES),
      ],
      providers: [Database, MigrationRunner],
      exports: [TypeOrmModule, Database],
    };
  }
}
