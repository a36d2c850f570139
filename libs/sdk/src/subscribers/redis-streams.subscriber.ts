import type { ClaimedRun } from '@app/contracts';
import { type DispatchMessage, partitionCountKey, queueName, queueStreams, RedisConnection } from '@app/streams';
import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { CoordinatorApi } from '../worker/coordinator.api';
import type { WorkflowRegistry } from '../worker/workflow.registry';
import { type RedisSubscriberOptions, shuffled } from './redis-subscriber.options';
import { delivery, type NextDelayParams, type Subscriber } from './subscriber.interface';

/** All workers of a deployment compete in one consumer group per stream. */
export const CONSUMER_GROUP = 'workers';

type StreamEntry = [id: string, fields: string[]];
interface Delivery {
  stream: string;
  entryId: string;
}

/** Consumers idle and empty for this long are deleted (consumer names must not pile up). */
const STALE_CONSUMER_MS = 3_600_000;

/**
 * Redis Streams subscriber. Reads its queues' partition streams (as many as the coordinator
 * published, else `partitionsFallback`) in one consumer group, blocking on a connection of its own.
 * Messages of workers that died are claimed after `claimMinIdleTimeMs` (XAUTOCLAIM), and one
 * delivered more than `maxDeliveries` times goes to the dead-letter stream. A message is acknowledged
 * (XACK + XDEL) once its run is done on this worker, or at once when it was stale.
 */
export class RedisStreamsSubscriber implements Subscriber {
  readonly name = 'redis-streams';
  private readonly logger = new Logger(RedisStreamsSubscriber.name);
  private readonly reader: Redis;
  private readonly queues: string[];
  /** Messages behind each taken run, by run id and the revision it was taken at. */
  private readonly deliveries = new Map<string, Delivery[]>();
  private streams: string[] = [];
  private groupsReady = false;
  private lastReclaim = 0;
  private lastConsumerCleanup = 0;
  stale = 0;
  deadLettered = 0;

  constructor(
    private readonly redis: RedisConnection,
    private readonly api: CoordinatorApi,
    registry: WorkflowRegistry,
    private readonly options: RedisSubscriberOptions,
    private readonly consumer: string,
  ) {
    this.reader = redis.open('stream reader', { blockingTimeout: options.blockMs, blockingTimeoutGrace: 2_000 });
    this.queues = registry.refs().map((ref) => queueName(ref.name, ref.version, ref.shard));
  }

  /** Where messages delivered too often go (with where they came from). */
  get deadLetterStream(): string {
    return `${this.redis.prefix}workflow.dead-letters`;
  }

  async getReadyRuns(limit: number): Promise<ClaimedRun[]> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    try {
      await this.prepare();
      const entries = await this.reclaim(limit);
      if (entries.length === 0) entries.push(...(await this.readNew(limit)));
      return await this.take(entries);
    } catch (error) {
      if (String((error as Error).message).includes('NOGROUP')) {
        // The streams or groups vanished (FLUSHALL, a new Redis): recreate them next time.
        this.groupsReady = false;
        return [];
      }
      throw error;
    }
  }

  getNextDelay(params: NextDelayParams): number {
    return params.type === 'no_work' ? 0 : Math.min(5_000, 100 * 2 ** params.attempt);
  }

  /** Keeps the message of a long-running run from looking abandoned (resets its idle time). */
  async heartbeat(runId: string, revision: number): Promise<void> {
    const pipeline = this.redis.client.pipeline();
    for (const entry of this.deliveries.get(delivery(runId, revision)) ?? []) {
      pipeline.xclaim(entry.stream, CONSUMER_GROUP, this.consumer, 0, entry.entryId, 'JUSTID');
    }
    await pipeline.exec();
  }

  /** Acknowledges the messages behind this taking of the run (not those of a later one). */
  async acknowledge(runId: string, revision: number): Promise<void> {
    const deliveries = this.deliveries.get(delivery(runId, revision));
    this.deliveries.delete(delivery(runId, revision));
    if (deliveries) await this.ack(deliveries);
  }

  async probe(): Promise<void> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    await this.redis.client.ping();
  }

  /** Reads the published partition count, creates the consumer groups (idempotently), cleans up consumers. */
  private async prepare(): Promise<void> {
    if (this.groupsReady) return;
    const published = Number(await this.redis.client.get(partitionCountKey(this.redis.prefix)));
    const partitions = Number.isInteger(published) && published > 0 ? published : this.options.partitionsFallback;
    this.streams = queueStreams(this.redis.prefix, this.queues, partitions);
    for (const stream of this.streams) {
      // From the start of the stream ('0'): messages published before the group existed are not skipped.
      await this.redis.client.xgroup('CREATE', stream, CONSUMER_GROUP, '0', 'MKSTREAM').catch((error: Error) => {
        if (!error.message.includes('BUSYGROUP')) throw error;
      });
    }
    this.groupsReady = true;
    await this.deleteIdleConsumers();
  }

  private async readNew(limit: number): Promise<{ stream: string; entry: StreamEntry }[]> {
    const order = shuffled(this.streams);
    const reply = (await this.reader.xreadgroup(
      'GROUP',
      CONSUMER_GROUP,
      this.consumer,
      'COUNT',
      limit,
      'BLOCK',
      this.options.blockMs,
      'STREAMS',
      ...order,
      ...order.map(() => '>'),
    )) as [string, StreamEntry[]][] | null;
    return (reply ?? []).flatMap(([stream, entries]) => entries.map((entry) => ({ stream, entry })));
  }

  /**
   * Claims messages whose consumer has been idle past claimMinIdleTimeMs (it died or hung). Since
   * Redis 7, XAUTOCLAIM also returns ids that were deleted from the stream while pending (third
   * element); Redis drops them from the PEL, and their runs are restored from PostgreSQL by the
   * coordinator's republish daemon, so they are only counted here.
   */
  private async reclaim(limit: number): Promise<{ stream: string; entry: StreamEntry }[]> {
    const now = Date.now();
    if (now - this.lastReclaim < Math.min(this.options.claimMinIdleTimeMs / 2, 5_000)) return [];
    this.lastReclaim = now;
    const claimed: { stream: string; entry: StreamEntry }[] = [];
    for (const stream of this.streams) {
      if (claimed.length >= limit) break;
      const [, entries, deleted] = (await this.redis.client.xautoclaim(
        stream,
        CONSUMER_GROUP,
        this.consumer,
        this.options.claimMinIdleTimeMs,
        '0-0',
        'COUNT',
        limit - claimed.length,
      )) as [string, (StreamEntry | null)[], string[]?];
      if (deleted && deleted.length > 0) this.logger.warn(`${deleted.length} pending message(s) of ${stream} were deleted from the stream`);
      for (const entry of entries) if (entry) claimed.push({ stream, entry });
    }
    if (claimed.length === 0) return [];
    return this.dropPoison(claimed);
  }

  /** Reclaimed messages delivered too often are moved to the dead-letter stream and acknowledged. */
  private async dropPoison(claimed: { stream: string; entry: StreamEntry }[]): Promise<{ stream: string; entry: StreamEntry }[]> {
    const pipeline = this.redis.client.pipeline();
    for (const { stream, entry } of claimed) pipeline.xpending(stream, CONSUMER_GROUP, entry[0], entry[0], 1);
    const pending = (await pipeline.exec()) ?? [];
    const keep: { stream: string; entry: StreamEntry }[] = [];
    for (const [i, item] of claimed.entries()) {
      const info = (pending[i]?.[1] as [string, string, number, number][] | undefined)?.[0];
      const deliveries = info ? Number(info[3]) : 0;
      if (deliveries <= this.options.maxDeliveries) {
        keep.push(item);
        continue;
      }
      await this.redis.client.xadd(
        this.deadLetterStream,
        '*',
        'stream',
        item.stream,
        'id',
        item.entry[0],
        'deliveries',
        String(deliveries),
        ...item.entry[1],
      );
      await this.ack([{ stream: item.stream, entryId: item.entry[0] }]);
      this.deadLettered++;
      this.logger.warn(`message ${item.entry[0]} of ${item.stream} was delivered ${deliveries} times; moved to ${this.deadLetterStream}`);
    }
    return keep;
  }

  private async take(entries: { stream: string; entry: StreamEntry }[]): Promise<ClaimedRun[]> {
    if (entries.length === 0) return [];
    const byRun = new Map<string, { message: DispatchMessage; deliveries: Delivery[] }>();
    const malformed: Delivery[] = [];
    for (const { stream, entry } of entries) {
      const delivery = { stream, entryId: entry[0] };
      const message = parseMessage(entry[1]);
      if (!message) {
        // Left pending: redelivered until it is dead-lettered, so it stays visible.
        this.logger.warn(`malformed message ${entry[0]} in ${stream}`);
        malformed.push(delivery);
        continue;
      }
      const known = byRun.get(message.runId);
      if (known) {
        known.deliveries.push(delivery);
        if (message.revision > known.message.revision) known.message = message;
      } else byRun.set(message.runId, { message, deliveries: [delivery] });
    }
    const taken = await this.api.take([...byRun.values()].map(({ message }) => ({ id: message.runId, revision: message.revision })));
    this.stale += taken.stale.length;
    await this.ack(taken.stale.flatMap((runId) => byRun.get(runId)?.deliveries ?? []));
    for (const run of taken.runs) this.deliveries.set(delivery(run.id, run.revision), byRun.get(run.id)?.deliveries ?? []);
    return taken.runs;
  }

  private async ack(deliveries: Delivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    const pipeline = this.redis.client.pipeline();
    for (const { stream, entryId } of deliveries) {
      pipeline.xack(stream, CONSUMER_GROUP, entryId);
      pipeline.xdel(stream, entryId);
    }
    await pipeline.exec();
  }

  private async deleteIdleConsumers(): Promise<void> {
    if (Date.now() - this.lastConsumerCleanup < STALE_CONSUMER_MS) return;
    this.lastConsumerCleanup = Date.now();
    for (const stream of this.streams) {
      const consumers = (await this.redis.client.xinfo('CONSUMERS', stream, CONSUMER_GROUP)) as (string | number)[][];
      for (const fields of consumers) {
        const info: Record<string, string | number> = {};
        for (let i = 0; i < fields.length; i += 2) info[String(fields[i])] = fields[i + 1];
        if (Number(info.pending) === 0 && Number(info.idle) > STALE_CONSUMER_MS && info.name !== this.consumer) {
          await this.redis.client.xgroup('DELCONSUMER', stream, CONSUMER_GROUP, String(info.name));
        }
      }
    }
  }
}

function parseMessage(fields: string[]): DispatchMessage | undefined {
  const at = fields.indexOf('message');
  if (at < 0) return undefined;
  const raw = fields[at + 1];
  try {
    const message = JSON.parse(raw) as DispatchMessage;
    return typeof message.runId === 'string' && Number.isInteger(message.revision) ? message : undefined;
  } catch {
    return undefined;
  }
}
