import { CONSUMER_GROUP } from '../naming/stream-keys';
import { type RedisClient, RedisConnection } from '../connection/redis.connection';
import { MAX_GIVE_BACKS, shuffled } from './consumer.options';

/** One entry of a partition stream: a wake-up for the stream's queue. */
export interface StreamEntry {
  stream: string;
  id: string;
  fields: string[];
}

export type RawEntry = [id: string, fields: string[]];

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
 * from ARGV[5..], or read from the stream when none are passed), with `hops` counting how often the
 * coordinator handed it back (ARGV[4]: 1 for such a give-back, 0 for one this worker had no room
 * for); then the original acknowledged and deleted. A copy past ARGV[3] hops is not made: a wake-up
 * that keeps finding its work locked must not circle forever (republish restores the run).
 */
const GIVE_BACK = `
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
if #fields == 0 then
  local found = redis.call('XRANGE', KEYS[1], ARGV[2], ARGV[2])
  if #found > 0 then fields = found[1][2] end
end
local copy, hops = {}, 0
for i = 1, #fields - 1, 2 do
  if fields[i] == 'hops' then hops = tonumber(fields[i + 1]) or 0
  else copy[#copy + 1] = fields[i]; copy[#copy + 1] = fields[i + 1] end
end
hops = hops + tonumber(ARGV[4])
local added = 0
if #copy > 0 and hops <= tonumber(ARGV[3]) then
  if hops > 0 then
    copy[#copy + 1] = 'hops'
    copy[#copy + 1] = tostring(hops)
  end
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
 * The Redis side of a Streams consumer, but for its blocking reads (PartitionReaders): reading what
 * is there (bounded), giving entries back, acknowledging them, and finding entries left pending (by
 * dead consumers, or delivered to this one by a read it never saw answered). Every script names the
 * streams of one partition, so one hash slot; commands on several streams are sent one by one.
 */
export class StreamEntries {
  /** Where XAUTOCLAIM resumes in each stream's pending list (it scans at most COUNT x 10 entries a call). */
  private readonly reclaimCursors = new Map<string, string>();

  constructor(
    private readonly redis: RedisConnection,
    private readonly consumer: string,
  ) {}

  async whenReady(): Promise<void> {
    await this.redis.whenReady(this.redis.client);
  }

  /**
   * Up to `limit` new entries in all, without blocking: one script per partition (its streams share a
   * slot), partitions and streams in a fresh random order, until `limit` is reached.
   */
  async readAvailable(byPartition: readonly (readonly string[])[], limit: number): Promise<StreamEntry[]> {
    const found: StreamEntry[] = [];
    for (const streams of shuffled([...byPartition])) {
      if (found.length >= limit) break;
      if (streams.length === 0) continue;
      const order = shuffled([...streams]);
      const reply = (await this.redis.client.eval(READ_BOUNDED, order.length, ...order, CONSUMER_GROUP, this.consumer, limit - found.length)) as [
        string,
        RawEntry[],
      ][];
      found.push(...reply.flatMap(([stream, entries]) => entries.map(([id, fields]) => ({ stream, id, fields }))));
    }
    return found;
  }

  /** Entries the coordinator handed back (their queue still has runs waiting): one more hop each. */
  async giveBack(entries: StreamEntry[]): Promise<void> {
    await this.returnToGroup(entries, 1);
  }

  /** Entries this worker has no room for: back to the group for another consumer, not counted as a hop. */
  async putBack(entries: StreamEntry[]): Promise<void> {
    await this.returnToGroup(entries, 0);
  }

  async ack(entries: Pick<StreamEntry, 'stream' | 'id'>[]): Promise<void> {
    failOnFirstError(await this.redis.sendEach(entries, (client, { stream, id }) => client.eval(ACK, 1, stream, CONSUMER_GROUP, id)));
  }

  /** Resets the idle time of entries this consumer is still working on (a long run must not look abandoned). */
  async touch(entries: Pick<StreamEntry, 'stream' | 'id'>[]): Promise<void> {
    failOnFirstError(await this.redis.sendEach(entries, (client, { stream, id }) => claimJustId(client, stream, this.consumer, id)));
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
   * Entries pending under this consumer for `minIdleMs` or more that are not among `known` (delivered
   * by a read it never saw answered), claimed back without counting a delivery (JUSTID: they were
   * delivered once, to it). Younger ones may be on their way to it still (a read's reply, a give-back).
   */
  async adopt(streams: readonly string[], known: Set<string>, limit: number, minIdleMs: number): Promise<StreamEntry[]> {
    const pending = await this.redis.sendEach(streams, (client, stream) =>
      client.xpending(stream, CONSUMER_GROUP, 'IDLE', minIdleMs, '-', '+', limit + known.size, this.consumer),
    );
    const unseen = streams
      .flatMap((stream, i) => ((pending[i]?.[1] ?? []) as [string][]).map(([id]) => ({ stream, id })).filter((entry) => !known.has(entryKey(entry))))
      .slice(0, limit);
    const claimed = await this.redis.sendEach(unseen, (client, { stream, id }) => claimJustId(client, stream, this.consumer, id));
    failOnFirstError(claimed);
    return unseen.filter((_, i) => (claimed[i][1] as string[]).length > 0).map((entry) => ({ ...entry, fields: [] }));
  }

  /** How many times each entry was delivered (XPENDING), in order. */
  async deliveryCounts(entries: StreamEntry[]): Promise<number[]> {
    const pending = await this.redis.sendEach(entries, (client, { stream, id }) => client.xpending(stream, CONSUMER_GROUP, id, id, 1));
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

  private async returnToGroup(entries: StreamEntry[], hop: 0 | 1): Promise<void> {
    failOnFirstError(
      await this.redis.sendEach(entries, (client, entry) =>
        client.eval(GIVE_BACK, 1, entry.stream, CONSUMER_GROUP, entry.id, MAX_GIVE_BACKS, hop, ...entry.fields),
      ),
    );
  }
}

/** Several commands fail as one call would: with the first error among them. */
function failOnFirstError(results: [Error | null, unknown][]): void {
  const failed = results.find(([error]) => error);
  if (failed) throw failed[0];
}

/** XCLAIM … JUSTID with min idle 0 (taken now, no delivery counted); through `call`, as ioredis's typings refuse this overload on a Redis | Cluster. */
function claimJustId(client: RedisClient, stream: string, consumer: string, id: string): Promise<unknown> {
  return client.call('XCLAIM', stream, CONSUMER_GROUP, consumer, '0', id, 'JUSTID');
}

/** An entry's identity across streams. */
export function entryKey(entry: Pick<StreamEntry, 'stream' | 'id'>): string {
  return `${entry.stream}/${entry.id}`;
}
