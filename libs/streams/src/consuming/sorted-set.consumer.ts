import { settleWithin } from '@nest-durable/common';
import type { RedisClient, RedisConnection } from '../connection/redis.connection';
import { sortedSetKey } from '../naming/stream-keys';
import type { Consumer, Reclaimed, Wakeup } from './consumer.interface';
import { BLOCKING_GRACE_MS, MAX_GIVE_BACKS, type RedisSubscriberOptions, shuffled } from './consumer.options';

/**
 * Behind the blocking pop, fills the remaining capacity round-robin across the queues, so a busy
 * queue cannot starve a quiet one. Returns key, member pairs.
 */
const FILL_ROUND_ROBIN = `
local wanted = tonumber(ARGV[1])
local out = {}
local active = KEYS
while wanted > 0 and #active > 0 do
  local still = {}
  for _, key in ipairs(active) do
    if wanted == 0 then break end
    local popped = redis.call('ZPOPMIN', key)
    if #popped > 0 then
      out[#out + 1] = key
      out[#out + 1] = popped[1]
      wanted = wanted - 1
      still[#still + 1] = key
    end
  end
  active = still
end
return out`;

/** A wake-up popped from a sorted set: named by its member (`<runId>:<outbox id>[#<hops>]`, unique). */
export interface SortedSetWakeup extends Wakeup {
  /** The set it was popped from. */
  readonly key: string;
}

/**
 * The Redis sorted-set consumer (one set of wake-ups per workflow version and shard, all in one hash slot:
 * see sortedSetKey). Blocks on its queues with BZPOPMIN over a shuffled key order on a connection of its
 * own, so work arrives the moment it is published, with the round-robin fill of the other wake-ups asked
 * for queued behind it. Popping removes a wake-up, so each reaches one worker, and there is nothing to
 * acknowledge or reclaim: a wake-up popped by a worker that died (or by a read the client gave up on) is
 * restored by the coordinator's republish daemon. Wake-ups that must come again go back into their sets.
 */
export class SortedSetConsumer implements Consumer<SortedSetWakeup> {
  private readonly reader: RedisClient;
  /** The queue of each set, by key. */
  private readonly queues = new Map<string, string>();
  /** A pop of a call that returned early (see read()); the next call takes it over. */
  private popping: Promise<SortedSetWakeup[]> | undefined;

  constructor(
    private readonly redis: RedisConnection,
    queues: readonly string[],
    private readonly options: Pick<RedisSubscriberOptions, 'blockMs'>,
  ) {
    // A client-side guard longer than the BLOCK: a read that never returns (across a reconnect) ends. A
    // wake-up popped by a read the client gave up on is lost to it (and a fill behind it: see pop()); the
    // republish daemon restores them.
    this.reader = redis.open('sorted-set reader', { blockingTimeout: options.blockMs, blockingTimeoutGrace: BLOCKING_GRACE_MS });
    for (const queue of queues) this.queues.set(sortedSetKey(redis.prefix, queue), queue);
  }

  attend<T>(call: () => Promise<T>): Promise<T> {
    return call();
  }

  /** Nothing: what a worker that died popped is gone from Redis, and republish gives its runs new wake-ups. */
  async reclaim(_max: number, _holding: Iterable<SortedSetWakeup>): Promise<Reclaimed<SortedSetWakeup>[]> {
    return [];
  }

  /**
   * What a pop brings. When `signal` aborts first, it returns nothing and leaves the pop in flight: the
   * next call takes it over (a blocking pop cannot be called back without a round trip), and gives back
   * what it brought beyond that call's `max`.
   */
  async read(max: number, signal: AbortSignal): Promise<SortedSetWakeup[]> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    if (signal.aborted && !this.popping) return [];
    const popping = this.popping ?? this.pop(max);
    this.popping = popping;
    if (!(await settledBefore(popping, signal))) return [];
    this.popping = undefined;
    const popped = await popping;
    await this.putBack(popped.splice(max));
    return popped;
  }

  /** Nothing to do: the pop removed them. */
  async ack(_wakeups: SortedSetWakeup[]): Promise<void> {}

  /** Back into their sets with one more hop each (a `#<n>` suffix); past MAX_GIVE_BACKS dropped (republish restores the run). */
  async giveBack(wakeups: SortedSetWakeup[]): Promise<void> {
    await this.putBack(
      wakeups.flatMap((wakeup) => {
        const next = nextHop(wakeup.name);
        return next ? [{ ...wakeup, name: next }] : [];
      }),
    );
  }

  async restore(wakeups: SortedSetWakeup[]): Promise<void> {
    await this.putBack(wakeups);
  }

  /** Nothing to do: a popped wake-up is never reclaimed. */
  async touch(_wakeups: SortedSetWakeup[]): Promise<void> {}

  async probe(): Promise<void> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    await this.redis.client.ping();
  }

  /** Puts back what a pop left in flight brings (the worker is shutting down). */
  async close(): Promise<void> {
    const popped = await this.popping?.catch(() => undefined);
    this.popping = undefined;
    if (popped) await this.putBack(popped);
  }

  /**
   * Up to `max` wake-ups: a blocking pop, and the round-robin fill sent right behind it on the same
   * connection, which Redis runs the moment the pop is served (one round trip per batch, not two: 0.5-1 ms
   * of every start). The fill runs after a pop that timed out too; what it popped is returned all the same.
   * When either fails, what the other popped goes back and the error is thrown. The fill gets
   * BLOCKING_GRACE_MS once the pop settled: on a connection that went dead without closing, the client's
   * guard ends the pop but nothing would end the fill (the reader has no command timeout, see
   * RedisConnection.open), so the reader is made to reconnect instead.
   */
  private async pop(max: number): Promise<SortedSetWakeup[]> {
    const order = shuffled([...this.queues.keys()]);
    const pop = this.reader.bzpopmin(...order, this.options.blockMs / 1000);
    const fill = max > 1 ? (this.reader.eval(FILL_ROUND_ROBIN, order.length, ...order, max - 1) as Promise<string[]>) : Promise.resolve([]);
    fill.catch(() => undefined); // handled below, once the pop settled: an early failure must not go unhandled meanwhile
    const filled = pop.then(
      () => settleWithin(fill, BLOCKING_GRACE_MS, fillTimedOut),
      () => settleWithin(fill, BLOCKING_GRACE_MS, fillTimedOut),
    );
    const [first, more] = await Promise.allSettled([pop, filled]);
    const popped: SortedSetWakeup[] = [];
    if (first.status === 'fulfilled' && first.value) popped.push(this.wakeupOf(first.value[0], first.value[1]));
    if (more.status === 'fulfilled') for (let i = 0; i < more.value.length; i += 2) popped.push(this.wakeupOf(more.value[i], more.value[i + 1]));
    const failure = first.status === 'rejected' ? first.reason : more.status === 'rejected' ? more.reason : undefined;
    if (failure === undefined) return popped;
    if (failure instanceof FillTimeout) this.reader.disconnect(true);
    await this.putBack(popped);
    throw failure;
  }

  private wakeupOf(key: string, member: string): SortedSetWakeup {
    return { queue: this.queues.get(key)!, name: member, key };
  }

  /** Wake-ups go back into their sets (best effort: else the republish daemon restores their runs). */
  private async putBack(wakeups: SortedSetWakeup[]): Promise<void> {
    if (wakeups.length === 0) return;
    const now = Date.now();
    await this.redis.sendEach(wakeups, (client, { key, name }) => client.zadd(key, now, name));
  }
}

/** The fill behind a blocking pop went unanswered (see SortedSetConsumer.pop). */
class FillTimeout extends Error {}

const fillTimedOut = () => new FillTimeout(`the sorted-set fill got no answer within ${BLOCKING_GRACE_MS} ms of its pop`);

/** Whether `work` settled before `signal` aborted. It goes on either way: it is only no longer waited for. */
function settledBefore(work: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const stop = () => resolve(false);
    const done = () => {
      signal.removeEventListener('abort', stop);
      resolve(true);
    };
    signal.addEventListener('abort', stop, { once: true });
    work.then(done, done);
  });
}

/**
 * A wake-up given back once more: members are `<runId>:<outbox id>`, and `#<n>` counts the times it
 * was given back; undefined past MAX_GIVE_BACKS (a wake-up whose work stays locked must not circle).
 */
export function nextHop(member: string): string | undefined {
  const at = member.lastIndexOf('#');
  const hops = at < 0 ? 0 : Number(member.slice(at + 1));
  if (hops >= MAX_GIVE_BACKS) return undefined;
  return `${at < 0 ? member : member.slice(0, at)}#${hops + 1}`;
}
