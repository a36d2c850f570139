import { ConfigError } from '@app/config';
import { Database } from '@app/persistence';
import type { StreamPartitionCount } from '@app/streams';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { COORDINATOR_APPLICATION_NAME, COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';

const SETTING = 'stream_partitions';

/**
 * The deployment's Redis Streams partition count, agreed in PostgreSQL so coordinators can never
 * write to different sets of streams. The first coordinator stores its STREAM_PARTITIONS; a later one
 * with another value is refused (it does not start) while any other coordinator is connected, and
 * may change the count only when it is alone (stop them all, start one with the new count). Workers
 * follow the count published in Redis. Serialised by a transaction-level advisory lock, so two
 * coordinators starting at once with different counts cannot both win.
 */
@Injectable()
export class StreamPartitions implements StreamPartitionCount, OnModuleInit {
  private agreed: number | undefined;

  constructor(
    private readonly db: Database,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  get count(): number {
    if (this.agreed === undefined) throw new Error('the stream partition count is not agreed yet (before onModuleInit)');
    return this.agreed;
  }

  async onModuleInit(): Promise<void> {
    this.agreed = await this.agree(this.config.streamPartitions);
  }

  private agree(wanted: number): Promise<number> {
    return this.db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('wf-engine-settings'))`);
      const [stored] = await tx.query<{ value: number }>(`SELECT value FROM engine_settings WHERE name = $1`, [SETTING]);
      if (stored && Number(stored.value) === wanted) return wanted;
      if (stored) {
        const [{ others }] = await tx.query<{ others: number }>(
          `SELECT count(*)::int AS others FROM pg_stat_activity
            WHERE datname = current_database() AND application_name LIKE $1 AND application_name <> $2`,
          [`${COORDINATOR_APPLICATION_NAME} %`, this.config.applicationName],
        );
        if (others > 0) {
          throw new ConfigError(
            `STREAM_PARTITIONS is ${wanted}, but this deployment's streams have ${stored.value} partitions and other coordinators are running: ` +
              `set STREAM_PARTITIONS=${stored.value} (to change the count, stop every coordinator and start one with the new value)`,
          );
        }
        new Logger(StreamPartitions.name).warn(`changing the stream partition count from ${stored.value} to ${wanted}`);
      }
      await tx.query(
        `INSERT INTO engine_settings (name, value) VALUES ($1, to_jsonb($2::integer))
         ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = now()`,
        [SETTING, wanted],
      );
      return wanted;
    });
  }
}
