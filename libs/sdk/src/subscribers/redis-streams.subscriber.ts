import { type ClaimedRun, parseRunId, type WorkflowRef } from '@app/contracts';
import { CONSUMER_GROUP, partitionCountKey, queueName, RedisConnection, streamKey } from '@app/streams';
import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { CoordinatorApi } from '../worker/coordinator.api';
import type { WorkflowRegistry } from '../worker/workflow.registry';
import { BLOCKING_GRACE_MS, type RedisSubscriberOptions, shuffled } from './redis-subscriber.options';
import { delivery, type NextDelayParams, type Subscriber } from './subscriber.interface';

type StreamEntry = [id: string, fields: string[]];
interface Delivery {
  stream: string;
  entryId: string;
}
interface Read {
  stream: string;
  entry: StreamEntry;
}

/**
 * Reads at most ARGV[3] new entries in all, stream after stream (KEYS, in order), without blocking:
 * XREADGROUP's COUNT bounds each stream, not the total, so a plain multi-stream read would hand a
 * worker up to COUNT entries per stream. Returns {stream, entries} pairs.
 */
const READ_BOUNDED = `
local want = tonumber(ARGV[3])
local out = {}
for _, key in ipairs(KEYS) do
  if want <= 0 then break end
  local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', want, 'STREAMS', key, '>')
  if reply then
    local entries = reply[1][2]
    if #entries > 0 then
      out[#out + 1] = { key, entries }
      want = want - #entries
    end
  end
end
return out`;

/**
 * Gives an entry back to the group, for another consumer: a copy at the end of its stream, and the
 * original acknowledged and deleted, atomically (one key, so one slot).
 */
const GIVE_BACK = `
redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return 1`;

/** Consumers idle and empty for this long are deleted (consumer names must not pile up). */
const STALE_CONSUMER_MS = 3_600_000;
/** How often a busy worker re-reads the published partition count (an idle one re-reads after each empty read). */
const LAYOUT_REFRESH_MS = 2_000;

/**
 * Redis Streams subscriber. Reads its queues' partition streams (as many as the coordinator
 * published, else `partitionsFallback`, re-read as it changes) in one consumer group, never more
 * entries than it has free slots: first without blocking, bounded in total, then one blocking read
 * on a connection of its own (entries beyond the free slots go back to the group). Each entry is a
 * wake-up for its queue; the worker takes as many runs of each queue at the coordinator, which picks
 * them as a claim would (priority, work stealing). Entries of workers that died are claimed after
 * `claimMinIdleTimeMs` (XAUTOCLAIM); one delivered more than `maxDeliveries` times is handed to the
 * coordinator as a dead letter. An entry is acknowledged (XACK + XDEL) once the run it took is done
 * here, or at once when it took nothing.
 */
export class RedisStreamsSubscriber implements Subscriber {
  readonly name = 'redis-streams';
  private readonly logger = new Logger(RedisStreamsSubscriber.name);
  private readonly reader: Redis;
  private readonly refs = new Map<string, WorkflowRef>();
  /** Entries behind each taken run, by run id and the revision it was taken at. */
  private readonly deliveries = new Map<string, Delivery[]>();
  private partitions = 0;
  private streams: string[] = [];
  private readonly queueOf = new Map<string, string>();
  private groupsReady = false;
  private layoutReadAt = 0;
  private lastReclaim = 0;
  /** Set when a blocking read was given up by the client: Redis may have delivered entries it never saw. */
  private orphansSuspected = false;
  private lastConsumerCleanup = 0;
  /** Wake-ups that took nothing. */
  stale = 0;
  deadLettered = 0;

  constructor(
    private readonly redis: RedisConnection,
    private readonly api: CoordinatorApi,
    registry: WorkflowRegistry,
    private readonly options: RedisSubscriberOptions,
    private readonly consumer: string,
  ) {
    this.reader = redis.open('stream reader', { blockingTimeout: options.blockMs, blockingTimeoutGrace: BLOCKING_GRACE_MS });
    for (const ref of registry.refs()) this.refs.set(queueName(ref.name, ref.version, ref.shard), ref);
  }

  /** The partition streams read now (for tests and health). */
  get readStreams(): readonly string[] {
    return this.streams;
  }

  async getReadyRuns(limit: number): Promise<ClaimedRun[]> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    try {
      await this.followLayout();
      const reads = await this.adoptOrphans(limit);
      if (reads.length < limit) reads.push(...(await this.reclaim(limit - reads.length)));
      if (reads.length < limit) reads.push(...(await this.readAvailable(limit - reads.length)));
      if (reads.length === 0) {
        reads.push(...(await this.readBlocking(limit)));
        if (reads.length === 0) {
          this.layoutReadAt = 0; // nothing came: look for partitions this worker does not read yet
          return [];
        }
        if (reads.length < limit) reads.push(...(await this.readAvailable(limit - reads.length)));
      }
      return await this.take(reads);
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

  /** Keeps the entry of a long-running run from looking abandoned (resets its idle time). */
  async heartbeat(runId: string, revision: number): Promise<void> {
    const pipeline = this.redis.client.pipeline();
    for (const entry of this.deliveries.get(delivery(runId, revision)) ?? []) {
      pipeline.xclaim(entry.stream, CONSUMER_GROUP, this.consumer, 0, entry.entryId, 'JUSTID');
    }
    await pipeline.exec();
  }

  /** Acknowledges the entries behind this taking of the run (not those of a later one). */
  async acknowledge(runId: string, revision: number): Promise<void> {
    const deliveries = this.deliveries.get(delivery(runId, revision));
    this.deliveries.delete(delivery(runId, revision));
    if (deliveries) await this.ack(deliveries);
  }

  async probe(): Promise<void> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    await this.redis.client.ping();
  }

  /**
   * Reads the published partition count (every LAYOUT_REFRESH_MS, and after an empty read) and,
   * when it changed or the groups vanished, creates the consumer groups of every partition stream
   * (idempotently). A worker started before any coordinator, or with another STREAM_SHARDS, thus
   * comes to read exactly the streams the deployment writes.
   */
  private async followLayout(): Promise<void> {
    if (this.groupsReady && Date.now() - this.layoutReadAt < LAYOUT_REFRESH_MS) return;
    const published = Number(await this.redis.client.get(partitionCountKey(this.redis.prefix)));
    this.layoutReadAt = Date.now();
    const partitions = Number.isInteger(published) && published > 0 ? published : this.options.partitionsFallback;
    if (this.groupsReady && partitions === this.partitions) return;
    if (this.partitions > 0 && partitions !== this.partitions) {
      this.logger.log(`reading ${partitions} partition(s) per queue (was ${this.partitions})`);
    }
    const streams: string[] = [];
    this.queueOf.clear();
    for (const queue of this.refs.keys()) {
      for (let n = 0; n < partitions; n++) {
        const stream = streamKey(this.redis.prefix, queue, n);
        streams.push(stream);
        this.queueOf.set(stream, queue);
      }
    }
    for (const stream of streams) {
      // From the start of the stream ('0'): entries published before the group existed are not skipped.
      await this.redis.client.xgroup('CREATE', stream, CONSUMER_GROUP, '0', 'MKSTREAM').catch((error: Error) => {
        if (!error.message.includes('BUSYGROUP')) throw error;
      });
    }
    this.streams = streams;
    this.partitions = partitions;
    this.groupsReady = true;
    await this.deleteIdleConsumers();
  }

  /** Up to `limit` new entries in all, without blocking, from the streams in a fresh random order. */
  private async readAvailable(limit: number): Promise<Read[]> {
    const order = shuffled(this.streams);
    const reply = (await this.redis.client.eval(READ_BOUNDED, order.length, ...order, CONSUMER_GROUP, this.consumer, limit)) as [
      string,
      StreamEntry[],
    ][];
    return reply.flatMap(([stream, entries]) => entries.map((entry) => ({ stream, entry })));
  }

  /**
   * Blocks until an entry arrives on any stream. The reply holds at most one entry per stream
   * (COUNT 1); entries beyond the free slots go back to the group at once.
   */
  private async readBlocking(limit: number): Promise<Read[]> {
    const order = shuffled(this.streams);
    const startedAt = Date.now();
    const reply = (await this.reader.xreadgroup(
      'GROUP',
      CONSUMER_GROUP,
      this.consumer,
      'COUNT',
      1,
      'BLOCK',
      this.options.blockMs,
      'STREAMS',
      ...order,
      ...order.map(() => '>'),
    )) as [string, StreamEntry[]][] | null;
    if (!reply && Date.now() - startedAt >= this.options.blockMs + BLOCKING_GRACE_MS) this.orphansSuspected = true;
    const reads = (reply ?? []).flatMap(([stream, entries]) => entries.map((entry) => ({ stream, entry })));
    for (const extra of reads.splice(limit)) {
      await this.redis.client.eval(GIVE_BACK, 1, extra.stream, CONSUMER_GROUP, extra.entry[0], ...extra.entry[1]);
    }
    return reads;
  }

  /**
   * Entries Redis delivered to this consumer that it never received: the reply to a blocking read
   * that came after the client had given up on it (an event loop stalled past the grace, say). They
   * sit in this consumer's pending list, where no other worker claims them for claimMinIdleTimeMs;
   * this worker takes them back at once when a read was given up, and at the reclaim pace otherwise.
   * Entries behind the runs executing here are known and left alone.
   */
  private async adoptOrphans(limit: number): Promise<Read[]> {
    if (!this.orphansSuspected) return [];
    this.orphansSuspected = false;
    const known = new Set([...this.deliveries.values()].flat().map(({ stream, entryId }) => `${stream}/${entryId}`));
    const pipeline = this.redis.client.pipeline();
    for (const stream of this.streams) pipeline.xpending(stream, CONSUMER_GROUP, '-', '+', limit + known.size, this.consumer);
    const pending = (await pipeline.exec()) ?? [];
    const adopted: Read[] = [];
    for (const [i, stream] of this.streams.entries()) {
      const ids = ((pending[i]?.[1] ?? []) as [string][]).map(([id]) => id).filter((id) => !known.has(`${stream}/${id}`));
      for (const id of ids.slice(0, limit - adopted.length)) {
        const [entry] = (await this.redis.client.xclaim(stream, CONSUMER_GROUP, this.consumer, 0, id)) as (StreamEntry | null)[];
        if (entry) adopted.push({ stream, entry });
      }
      if (adopted.length >= limit) break;
    }
    if (adopted.length > 0) this.logger.warn(`took back ${adopted.length} entries delivered to this worker by a read it had given up`);
    return adopted;
  }

  /**
   * Claims up to `limit` entries whose consumer has been idle past claimMinIdleTimeMs (it died or
   * hung). Since Redis 7, XAUTOCLAIM also returns ids that were deleted from the stream while pending
   * (third element); Redis drops them from the PEL, and their runs are restored from PostgreSQL by
   * the coordinator's republish daemon, so they are only counted here.
   */
  private async reclaim(limit: number): Promise<Read[]> {
    const now = Date.now();
    if (now - this.lastReclaim < Math.min(this.options.claimMinIdleTimeMs / 2, 5_000)) return [];
    this.lastReclaim = now;
    this.orphansSuspected = true; // and look for this worker's own, next time
    const claimed: Read[] = [];
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
      if (deleted && deleted.length > 0) this.logger.warn(`${deleted.length} pending entries of ${stream} were deleted from the stream`);
      for (const entry of entries) if (entry) claimed.push({ stream, entry });
    }
    if (claimed.length === 0) return [];
    return this.deadLetterOverDelivered(claimed);
  }

  /**
   * Reclaimed entries delivered more than maxDeliveries times (the workers that took them kept
   * stopping) go to the coordinator as dead letters, which fails their runs as `stalled` if those
   * are still held by an idle claim; then they are acknowledged. One the coordinator could not take
   * stays pending, to be handed over on a later reclaim.
   */
  private async deadLetterOverDelivered(claimed: Read[]): Promise<Read[]> {
    const pipeline = this.redis.client.pipeline();
    for (const { stream, entry } of claimed) pipeline.xpending(stream, CONSUMER_GROUP, entry[0], entry[0], 1);
    const pending = (await pipeline.exec()) ?? [];
    const keep: Read[] = [];
    for (const [i, read] of claimed.entries()) {
      const info = (pending[i]?.[1] as [string, string, number, number][] | undefined)?.[0];
      const deliveries = info ? Number(info[3]) : 0;
      if (deliveries <= this.options.maxDeliveries) {
        keep.push(read);
        continue;
      }
      const runId = runIdOf(read.entry[1]);
      try {
        await this.api.reportDeadLetter({
          ...(runId ? { runId } : {}),
          workflow: this.refs.get(this.queueOf.get(read.stream)!)!,
          stream: read.stream,
          entryId: read.entry[0],
          deliveries,
        });
      } catch (error) {
        this.logger.warn(`could not hand entry ${read.entry[0]} of ${read.stream} to the coordinator as a dead letter: ${(error as Error).message}`);
        continue;
      }
      await this.ack([{ stream: read.stream, entryId: read.entry[0] }]);
      this.deadLettered++;
      this.logger.warn(`entry ${read.entry[0]} of ${read.stream} was delivered ${deliveries} times; dead-lettered`, { runId });
    }
    return keep;
  }

  /**
   * Takes, per queue, as many runs as it read entries for; each taken run keeps one entry (its
   * acknowledgement waits for the run to end here), the entries left over took nothing and are
   * acknowledged now. An entry without a run id is still a wake-up for its queue.
   */
  private async take(reads: Read[]): Promise<ClaimedRun[]> {
    const byQueue = new Map<string, Delivery[]>();
    for (const { stream, entry } of reads) {
      const queue = this.queueOf.get(stream)!;
      const list = byQueue.get(queue) ?? [];
      list.push({ stream, entryId: entry[0] });
      byQueue.set(queue, list);
    }
    const runs = await this.api.take([...byQueue].map(([queue, list]) => ({ ...this.refs.get(queue)!, count: list.length })));
    for (const run of runs) {
      const entry = byQueue.get(run.queue)?.shift();
      if (entry) this.deliveries.set(delivery(run.id, run.revision), [entry]);
    }
    const unused = [...byQueue.values()].flat();
    this.stale += unused.length;
    await this.ack(unused);
    return runs;
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

/** The run an entry was published for, if it names a valid one. */
function runIdOf(fields: string[]): string | undefined {
  for (let i = 0; i < fields.length - 1; i += 2) {
    if (fields[i] !== 'run') continue;
    try {
      return parseRunId(fields[i + 1]);
    } catch {
      return undefined;
    }
  }
  return undefined;
}
