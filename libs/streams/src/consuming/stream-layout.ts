import { CONSUMER_GROUP, partitionCountKey, partitionStreams } from '../naming/stream-keys';
import { RedisConnection } from '../connection/redis.connection';
import { Logger } from '@nestjs/common';

/** How often a busy worker re-reads the published partition count (an idle one re-reads after each empty read). */
const REFRESH_MS = 2_000;

/**
 * Which streams a Streams worker reads: every partition of each of its queues, as many as the
 * coordinator published (else `fallback`), followed as the count changes (a new count renames the
 * streams, see streamKey). A worker started before any coordinator, or with another
 * STREAM_PARTITIONS, thus comes to read exactly the streams the deployment writes.
 */
export class StreamLayout {
  private readonly logger = new Logger(StreamLayout.name);
  private partitions = 0;
  private readAt = 0;
  private ready = false;
  private current: string[][] = [];
  /** Every stream read so far, kept across count changes: reads in flight may still bring entries of an older layout. */
  private readonly where = new Map<string, { queue: string; partition: number }>();

  constructor(
    private readonly redis: RedisConnection,
    private readonly queues: string[],
    private readonly fallback: number,
  ) {}

  /** Every partition stream read now. */
  get streams(): readonly string[] {
    return this.current.flat();
  }

  /** The streams read now, by partition: those of one partition share a hash slot, so one command may name them all. */
  get byPartition(): readonly (readonly string[])[] {
    return this.current;
  }

  queueOf(stream: string): string {
    return this.where.get(stream)!.queue;
  }

  partitionOf(stream: string): number {
    return this.where.get(stream)!.partition;
  }

  /** Re-read the count on the next follow (after an empty read: a partition may be missing). */
  recheck(): void {
    this.readAt = 0;
  }

  /** The streams or groups vanished (FLUSHALL, a new Redis): recreate them on the next follow. */
  lost(): void {
    this.ready = false;
  }

  /**
   * Reads the published count (every REFRESH_MS, or when asked to recheck) and, when it changed or
   * the groups vanished, creates the consumer group of every partition stream (idempotently, from the
   * start of the stream: entries published before the group existed are not skipped).
   */
  async follow(): Promise<void> {
    if (this.ready && Date.now() - this.readAt < REFRESH_MS) return;
    const published = Number(await this.redis.client.get(partitionCountKey(this.redis.prefix)));
    this.readAt = Date.now();
    const partitions = Number.isInteger(published) && published > 0 ? published : this.fallback;
    if (this.ready && partitions === this.partitions) return;
    if (this.partitions > 0 && partitions !== this.partitions) this.logger.log(`reading ${partitions} partition(s) per queue (was ${this.partitions})`);
    const byPartition = Array.from({ length: partitions }, (_, partition) => partitionStreams(this.redis.prefix, this.queues, partition, partitions));
    for (const [partition, streams] of byPartition.entries()) {
      for (const [i, stream] of streams.entries()) this.where.set(stream, { queue: this.queues[i], partition });
    }
    for (const stream of byPartition.flat()) {
      await this.redis.client.xgroup('CREATE', stream, CONSUMER_GROUP, '0', 'MKSTREAM').catch((error: Error) => {
        if (!error.message.includes('BUSYGROUP')) throw error;
      });
    }
    this.current = byPartition;
    this.partitions = partitions;
    this.ready = true;
  }
}
