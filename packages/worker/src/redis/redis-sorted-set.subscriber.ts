import type { ClaimedRun, WorkflowRef } from '@nest-durable/common';
import { queueName } from '@nest-durable/common';
import { sortedSetKey, type RedisClient, RedisConnection, BLOCKING_GRACE_MS, MAX_GIVE_BACKS, type RedisSubscriberOptions, shuffled } from '@app/streams';
import type { CoordinatorApi } from '../coordinator.api';
import type { WorkflowRegistry } from '../workflow.registry';
import type { HandOffOffers } from '../subscribers/hand-off-offers';
import { type NextDelayParams, settledBefore, type Subscriber } from '../subscribers/subscriber.interface';

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

/**
 * Redis sorted-set subscriber (one set of wake-ups per workflow version and shard, all in one hash
 * slot: see sortedSetKey). Blocks on its queues with BZPOPMIN over a shuffled key order on a
 * connection of its own, so work arrives the moment it is published, with the round-robin fill of its
 * other free slots queued behind it; popping removes a wake-up, so
 * each reaches one worker. It pops at most as many as it has free slots and takes that many runs of
 * those queues at the coordinator, which picks them as a claim would (priority, work stealing);
 * wake-ups the coordinator hands back (their queue still has runs waiting) go back into their sets,
 * the others are done with.
 */
export class RedisSortedSetSubscriber implements Subscriber {
  readonly name = 'redis-zset';
  private readonly reader: RedisClient;
  private readonly refs = new Map<string, WorkflowRef>();
  /** A pop of a call that returned early (see read()), by member; the next call takes it over. */
  private popping: Promise<Map<string, string>> | undefined;
  /** Wake-ups that took no run (the work they announced was taken another way). */
  stale = 0;

  constructor(
    private readonly redis: RedisConnection,
    private readonly api: CoordinatorApi,
    registry: WorkflowRegistry,
    private readonly options: RedisSubscriberOptions,
    private readonly offers?: HandOffOffers,
  ) {
    // A client-side guard longer than the BLOCK: a read that never returns (across a reconnect) ends. A
    // wake-up popped by a read the client gave up on is lost to it (and a fill behind it: see pop()); the
    // republish daemon restores them.
    this.reader = redis.open('sorted-set reader', { blockingTimeout: options.blockMs, blockingTimeoutGrace: BLOCKING_GRACE_MS });
    for (const ref of registry.refs()) this.refs.set(sortedSetKey(redis.prefix, queueName(ref.name, ref.version, ref.shard)), ref);
  }

  getReadyRuns(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
    return this.offers ? this.offers.around(limit, signal, (free, stop) => this.read(free, stop)) : this.read(limit, signal);
  }

  /**
   * Takes runs for what a pop brings. When `signal` aborts first, it returns nothing and leaves the pop in
   * flight: the next call takes it over (a blocking pop cannot be called back without a round trip).
   */
  private async read(limit: number, signal: AbortSignal): Promise<ClaimedRun[]> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    if (signal.aborted && !this.popping) return [];
    const popping = this.popping ?? this.pop(limit);
    this.popping = popping;
    if (!(await settledBefore(popping, signal))) return [];
    this.popping = undefined;
    // Members are unique wake-up names (`<runId>:<outbox id>`), so they name themselves in the take.
    const keyOf = await popping;
    // A pop an earlier call began may have brought more than this call has slots for: those go back.
    const excess = [...keyOf].slice(limit);
    for (const [member] of excess) keyOf.delete(member);
    await this.putBack(excess.map(([member, key]) => [key, member]));
    if (keyOf.size === 0) return [];
    let taken: Awaited<ReturnType<CoordinatorApi['take']>>;
    try {
      taken = await this.api.take(this.byQueue(keyOf));
    } catch (error) {
      await this.putBack([...keyOf].map(([member, key]) => [key, member]));
      throw error;
    }
    const { runs, requeue } = taken;
    this.stale += keyOf.size - runs.length - requeue.length;
    // Given back with one more hop; past MAX_GIVE_BACKS dropped (republish restores the run).
    const again = requeue.flatMap(({ wakeup }) => {
      const next = nextHop(wakeup);
      return next ? [[keyOf.get(wakeup)!, next] as [string, string]] : [];
    });
    await this.putBack(again);
    return runs;
  }

  /**
   * Up to `limit` wake-ups, by member (their sets as values): a blocking pop, and the round-robin fill sent
   * right behind it on the same connection, which Redis runs the moment the pop is served (one round trip
   * per batch, not two: 0.5-1 ms of every start). The fill runs after a pop that timed out too; what it
   * popped is taken all the same. When either fails, what the other popped goes back and the error is
   * thrown. The fill gets BLOCKING_GRACE_MS once the pop settled: on a connection that went dead without
   * closing, the client's guard ends the pop but nothing would end the fill (the reader has no command
   * timeout, see RedisConnection.open), so the reader is made to reconnect instead.
   */
  private async pop(limit: number): Promise<Map<string, string>> {
    const order = shuffled([...this.refs.keys()]);
    const pop = this.reader.bzpopmin(...order, this.options.blockMs / 1000);
    const fill = limit > 1 ? (this.reader.eval(FILL_ROUND_ROBIN, order.length, ...order, limit - 1) as Promise<string[]>) : Promise.resolve([]);
    fill.catch(() => undefined); // handled below, once the pop settled: an early failure must not go unhandled meanwhile
    const filled = pop.then(
      () => within(fill, BLOCKING_GRACE_MS),
      () => within(fill, BLOCKING_GRACE_MS),
    );
    const [first, more] = await Promise.allSettled([pop, filled]);
    const keyOf = new Map<string, string>();
    if (first.status === 'fulfilled' && first.value) keyOf.set(first.value[1], first.value[0]);
    if (more.status === 'fulfilled') for (let i = 0; i < more.value.length; i += 2) keyOf.set(more.value[i + 1], more.value[i]);
    const failure = first.status === 'rejected' ? first.reason : more.status === 'rejected' ? more.reason : undefined;
    if (failure === undefined) return keyOf;
    if (failure instanceof FillTimeout) this.reader.disconnect(true);
    await this.putBack([...keyOf].map(([member, key]) => [key, member]));
    throw failure;
  }

  /** Withdraws the hand-off offer, and puts back what a pop left in flight brings (the worker is shutting down). */
  async close(): Promise<void> {
    await this.offers?.close();
    const popped = await this.popping?.catch(() => undefined);
    this.popping = undefined;
    if (popped) await this.putBack([...popped].map(([member, key]) => [key, member]));
  }

  getNextDelay(params: NextDelayParams): number {
    return params.type === 'no_work' ? 0 : Math.min(5_000, 100 * 2 ** params.attempt);
  }

  async probe(): Promise<void> {
    await Promise.all([this.redis.whenReady(this.reader), this.redis.whenReady(this.redis.client)]);
    await this.redis.client.ping();
  }

  private byQueue(keyOf: Map<string, string>): (WorkflowRef & { wakeups: string[] })[] {
    const wakeups = new Map<string, string[]>();
    for (const [member, key] of keyOf) wakeups.set(key, [...(wakeups.get(key) ?? []), member]);
    return [...wakeups].map(([key, members]) => ({ ...this.refs.get(key)!, wakeups: members }));
  }

  /** Wake-ups go back into their sets (best effort: else the republish daemon restores their runs). */
  private async putBack(members: [key: string, member: string][]): Promise<void> {
    if (members.length === 0) return;
    const now = Date.now();
    await this.redis.sendEach(members, (client, [key, member]) => client.zadd(key, now, member));
  }
}

/** The fill behind a blocking pop went unanswered (see RedisSortedSetSubscriber.pop). */
class FillTimeout extends Error {}

/** `promise`, or a FillTimeout after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FillTimeout(`the sorted-set fill got no answer within ${ms} ms of its pop`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
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
