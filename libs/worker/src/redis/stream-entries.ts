import { CONSUMER_GROUP } from '@nest-durable/client';
import { RedisConnection } from './redis.connection';
import type { Redis } from 'ioredis';
import { BLOCKING_GRACE_MS, MAX_GIVE_BACKS, shuffled } from './redis-subscriber.options';

/** One entry of a partition stream: a wake-up for the stream's queue. */
export interface StreamEntry {
  stream: string;
  id: string;
  fields: string[];
}

type RawEntry = [id: string, fields: string[]];

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
 * Gives an entry back to the group for another consumer: a copy at the end of its stream (its fields
 * from ARGV[4..], or read from the stream when none are passed), with `hops` counting how often it was
 * given back; then the original acknowledged and deleted. A copy past ARGV[3] hops is not made: a
 * wake-up that keeps finding its work locked must not circle forever (republish restores the run).
 */
const GIVE_BACK = `
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
if #fields == 0 then
  local found = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
  if #found > 0 then fields = found[1][2] end
end
local copy, hops = {}, 0
for i = 1, #fields - 1, 2 do
  if fields[i] == 'hops' then hops = tonumber(fields[i + 1]) or 0
  else copy[#copy + 1] = fields[i]; copy[#copy + 1] = fields[i + 1] end
end
local added = 0
if #copy > 0 and hops < tonumber(ARGV[3]) then
  copy[#copy + 1] = 'hops'
  copy[#copy + 1] = tostring(hops + 1)
  redis.call('XADD', KEYS[1], '*', unpack(copy))
  added = 1
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
return added`;


/** Done with an entry: acknowledged and deleted together (an entry left acknowledged but not deleted would count as undelivered forever). */
const ACK = `
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return redis.call('XDEL', KEYS[1], ARGV[2])`;

/**
 * The Redis side of a Streams consumer: reading (bounded, then blocking), giving entries back,
 * acknowledging them, and finding entries left pending (by dead consumers, or delivered to this one
 * by a read it never saw answered). Every script touches one key, so one slot.
 */
export class StreamEntries {
  private readonly reader: Redis;
  /** Where XAUTOCLAIM resumes in each stream's pending list (it scans at most COUNT x 10 entries a call). */
  private readonly reclaimCursors = new Map<string, string>();

  constructor(
    private readonly redis: RedisConnection,
    private readonly consumer: string,
    private readonly blockMs: number,
  ) {
    this.reader = redis.open('stream reader', { blockingTimeout: blockMs, blockingTimeoutGrace: BLOCKING_GRACE_MS });
  }

  async whenReady(): Promise<void> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
  }

  /** Up to `limit` new entries in all, without blocking, from the streams in a fresh random order. */
  async readAvailable(streams: readonly string[], limit: number): Promise<StreamEntry[]> {
    if (limit <= 0) return [];
    const order = shuffled([...streams]);
    const reply = (await this.redis.client.eval(READ_BOUNDED, order.length, ...order, CONSUMER_GROUP, this.consumer, limit)) as [string, RawEntry[]][];
    return reply.flatMap(([stream, entries]) => entries.map(([id, fields]) => ({ stream, id, fields })));
  }

  /**
   * Blocks until an entry arrives on any stream. The reply holds at most one entry per stream
   * (COUNT 1); entries beyond `limit` go back to the group at once. `givenUp` is true when the client
   * gave the read up (no answer within the grace): Redis may have delivered entries it never saw.
   */
  async readBlocking(streams: readonly string[], limit: number): Promise<{ entries: StreamEntry[]; givenUp: boolean }> {
    const order = shuffled([...streams]);
    const startedAt = Date.now();
    const reply = (await this.reader.xreadgroup(
      'GROUP',
      CONSUMER_GROUP,
      this.consumer,
      'COUNT',
      1,
      'BLOCK',
      this.blockMs,
      'STREAMS',
      ...order,
      ...order.map(() => '>'),
    )) as [string, RawEntry[]][] | null;
    const givenUp = !reply && Date.now() - startedAt >= this.blockMs + BLOCKING_GRACE_MS;
    const entries = (reply ?? []).flatMap(([stream, list]) => list.map(([id, fields]) => ({ stream, id, fields })));
    await this.giveBack(entries.splice(limit));
    return { entries, givenUp };
  }

  async giveBack(entries: StreamEntry[]): Promise<void> {
    for (const entry of entries) {
      await this.redis.client.eval(GIVE_BACK, 1, entry.stream, CONSUMER_GROUP, entry.id, MAX_GIVE_BACKS, ...entry.fields);
    }
  }

  async ack(entries: Pick<StreamEntry, 'stream' | 'id'>[]): Promise<void> {
    if (entries.length === 0) return;
    const pipeline = this.redis.client.pipeline();
    for (const { stream, id } of entries) pipeline.eval(ACK, 1, stream, CONSUMER_GROUP, id);
    await pipeline.exec();
  }

  /** Resets the idle time of entries this consumer is still working on (a long run must not look abandoned). */
  async touch(entries: Pick<StreamEntry, 'stream' | 'id'>[]): Promise<void> {
    if (entries.length === 0) return;
    const pipeline = this.redis.client.pipeline();
    for (const { stream, id } of entries) pipeline.xclaim(stream, CONSUMER_GROUP, this.consumer, 0, id, 'JUSTID');
    await pipeline.exec();
  }

  /**
   * Up to `limit` entries whose consumer has been idle past `minIdleMs` (it died or hung), claimed for
   * this one, resuming each stream's scan where the last one stopped. Since Redis 7, XAUTOCLAIM also
   * drops ids deleted from the stream while pending (returned third): their runs are restored from
   * PostgreSQL by republish, so they are only counted.
   */
  async reclaim(streams: readonly string[], minIdleMs: number, limit: number): Promise<{ entries: StreamEntry[]; deleted: number }> {
    const entries: StreamEntry[] = [];
    let deleted = 0;
    for (const stream of streams) {
      if (entries.length >= limit) break;
      const [next, claimed, gone] = (await this.redis.client.xautoclaim(
        stream,
        CONSUMER_GROUP,
        this.consumer,
        minIdleMs,
        this.reclaimCursors.get(stream) ?? '0-0',
        'COUNT',
        limit - entries.length,
      )) as [string, (RawEntry | null)[], string[]?];
      this.reclaimCursors.set(stream, next);
      deleted += gone?.length ?? 0;
      for (const entry of claimed) if (entry) entries.push({ stream, id: entry[0], fields: entry[1] });
    }
    return { entries, deleted };
  }

  /**
   * Entries pending under this consumer that are not among `known` (delivered by a read it never saw
   * answered), claimed back without counting a delivery (JUSTID: they were delivered once, to it).
   */
  async adopt(streams: readonly string[], known: Set<string>, limit: number): Promise<StreamEntry[]> {
    const pipeline = this.redis.client.pipeline();
    for (const stream of streams) pipeline.xpending(stream, CONSUMER_GROUP, '-', '+', limit + known.size, this.consumer);
    const pending = (await pipeline.exec()) ?? [];
    const adopted: StreamEntry[] = [];
    for (const [i, stream] of streams.entries()) {
      const ids = ((pending[i]?.[1] ?? []) as [string][]).map(([id]) => id).filter((id) => !known.has(entryKey({ stream, id })));
      for (const id of ids.slice(0, limit - adopted.length)) {
        const [claimed] = (await this.redis.client.xclaim(stream, CONSUMER_GROUP, this.consumer, 0, id, 'JUSTID')) as string[];
        if (claimed) adopted.push({ stream, id: claimed, fields: [] });
      }
      if (adopted.length >= limit) break;
    }
    return adopted;
  }

  /** How many times each entry was delivered (XPENDING), in order. */
  async deliveryCounts(entries: StreamEntry[]): Promise<number[]> {
    const pipeline = this.redis.client.pipeline();
    for (const { stream, id } of entries) pipeline.xpending(stream, CONSUMER_GROUP, id, id, 1);
    const pending = (await pipeline.exec()) ?? [];
    return entries.map((_, i) => Number((pending[i]?.[1] as [string, string, number, number][] | undefined)?.[0]?.[3] ?? 0));
  }

  /** Deletes consumers of these streams that hold nothing and were idle longer than `idleMs` (names must not pile up). */
  async deleteIdleConsumers(streams: readonly string[], idleMs: number): Promise<void> {
    for (const stream of streams) {
      const consumers = (await this.redis.client.xinfo('CONSUMERS', stream, CONSUMER_GROUP)) as (string | number)[][];
      for (const fields of consumers) {
        const info: Record<string, string | number> = {};
        for (let i = 0; i < fields.length; i += 2) info[String(fields[i])] = fields[i + 1];
        if (Number(info.pending) === 0 && Number(info.idle) > idleMs && info.name !== this.consumer) {
          await this.redis.client.xgroup('DELCONSUMER', stream, CONSUMER_GROUP, String(info.name));
        }
      }
    }
  }
}

/** An entry's identity across streams. */
export function entryKey(entry: Pick<StreamEntry, 'stream' | 'id'>): string {
  return `${entry.stream}/${entry.id}`;
}
