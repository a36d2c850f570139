import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** Any constant shared by every process that migrates this schema. */
const MIGRATION_LOCK_KEY = 7_311_947_201;

/**
 * Applies pending migrations when the app starts. Several coordinators may start at once, so
 * they take turns on a session-level advisory lock; the second one finds nothing left to do.
 */
@Injectable()
export class MigrationRunner implements OnModuleInit {
  private readonly logger = new Logger(MigrationRunner.name);

  constructor(private readonly dataSource: DataSource) {}

  async onModuleInit(): Promise<void> {
    const lockHolder = this.dataSource.createQueryRunner();
    await lockHolder.connect();
    try {
      await lockHolder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      const applied = await this.dataSource.runMigrations({ transaction: 'each' });
      for (const migration of applied) this.logger.log(`applied migration ${migration.name}`);
    } finally {
      await lockHolder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
      await lockHolder.release();
    }
  }
}
