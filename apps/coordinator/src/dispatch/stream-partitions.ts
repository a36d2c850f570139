import { ConfigError } from '@app/config';
import { Database, engineSetting, lockEngineSettings, otherCoordinatorSessions, storeIntegerSetting } from '@app/persistence';
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
      await lockEngineSettings(tx);
      const stored = await engineSetting(tx, SETTING);
      if (stored !== undefined && Number(stored) === wanted) return wanted;
      if (stored !== undefined) {
        const others = await otherCoordinatorSessions(tx, `${COORDINATOR_APPLICATION_NAME} %`, this.config.applicationName);
        if (others > 0) {
          throw new ConfigError(
            `STREAM_PARTITIONS is ${wanted}, but this deployment's streams have ${stored} partitions and other coordinators are running: ` +
              `set STREAM_PARTITIONS=${stored} (to change the count, stop every coordinator and start one with the new value)`,
          );
        }
        new Logger(StreamPartitions.name).warn(`changing the stream partition count from ${stored} to ${wanted}`);
      }
      await storeIntegerSetting(tx, SETTING, wanted);
      return wanted;
    });
  }
}
