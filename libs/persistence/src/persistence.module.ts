import { DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Database } from './database';
import { RunTransitionEntity } from './entities/run-transition.entity';
import { RunEntity } from './entities/run.entity';
import { TaskEntity } from './entities/task.entity';
import { MigrationRunner } from './migration.runner';
import { InitialSchema1764500000000 } from './migrations/1764500000000-initial-schema';

export const ENTITIES = [RunEntity, TaskEntity, RunTransitionEntity];
export const MIGRATIONS = [InitialSchema1764500000000];

export interface PersistenceOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  poolSize: number;
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
            const { url, poolSize } = await options.useFactory(...args);
            return {
              type: 'postgres' as const,
              url,
              entities: ENTITIES,
              migrations: MIGRATIONS,
              migrationsRun: false,
              synchronize: false,
              extra: { max: poolSize, connectionTimeoutMillis: 10_000 },
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
