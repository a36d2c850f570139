import { describe, expect, it, jest } from '@jest/globals';
import type { FeedEvent, JsonValue, RunView } from '@nest-durable/common';
import { answeredError } from './json-http.client';
import { type WatchEvent, watchRun } from './run-watch';
import type { WorkflowClient } from './workflow.client';

const ID = '0190a0b4-0000-7000-8000-000000000001';
const run = (status: RunView['status'], progress: JsonValue = null, progressAt: string | null = null) =>
  ({ id: ID, status, revision: 1, progress, progressAt }) as RunView;
const progressEvent = (progress: JsonValue, at: string): FeedEvent => ({ type: 'progress', data: { id: ID, workflow: 'w', version: '1', progress, at } });

/** A client whose feed yields `events` after `open` (or answers 404 when null), and whose reads answer `reads` in turn. */
function fakeClient(
  events: FeedEvent[] | null,
  reads: RunView[],
  later: () => AsyncGenerator<FeedEvent> = async function* () {},
): { client: WorkflowClient; calls: string[] } {
  const calls: string[] = [];
  const client = {
    async *feed(): AsyncGenerator<FeedEvent> {
      if (events === null) throw answeredError(404, 'route_not_found', 'no feed');
      yield { type: 'open' };
      yield* events;
      yield* later();
      await new Promise(() => undefined); // open until the watch ends
    },
    get: async () => {
      calls.push('get');
      return reads.shift()!;
    },
    waitForResult: async () => {
      calls.push('poll');
      return reads.shift()!;
    },
  } as unknown as WorkflowClient;
  return { client, calls };
}

async function collect(events: AsyncIterable<WatchEvent>): Promise<WatchEvent[]> {
  const seen: WatchEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

describe('watchRun', () => {
  it("yields the run's kept progress, then each new one from the feed once, and ends with the terminal run", async () => {
    const { client } = fakeClient(
      [progressEvent(1, '2026-01-01T00:00:01.000Z'), progressEvent(2, '2026-01-01T00:00:02.000Z'), { type: 'run', data: {} as never }],
      [run('running', 1, '2026-01-01T00:00:01.000Z'), run('completed', 2, '2026-01-01T00:00:02.000Z')],
    );

    const events = await collect(watchRun(client, ID));

    expect(events.map((event) => (event.type === 'run' ? event.run.status : event.progress))).toEqual([1, 'running', 2, 'completed']);
  });

  it('reads a waiting run again only when the feed announces a change, not on the refresh interval', async () => {
    jest.useFakeTimers();
    try {
      let announce!: () => void;
      const announced = new Promise<void>((resolve) => (announce = resolve));
      const { client, calls } = fakeClient([], [run('waiting'), run('cancelled')], async function* () {
        await announced;
        yield { type: 'resync' };
      });
      const watch = watchRun(client, ID, { refreshMs: 10 });
      expect((await watch.next()).value).toMatchObject({ type: 'run', run: { status: 'waiting' } });
      const next = watch.next();
      await jest.advanceTimersByTimeAsync(100);
      expect(calls).toEqual(['get']);

      announce();
      expect((await next).value).toMatchObject({ type: 'run', run: { status: 'cancelled' } });
      expect(calls).toEqual(['get', 'get']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('polls a coordinator without a feed, yielding the run when it changed state and its progress', async () => {
    const { client, calls } = fakeClient(null, [
      run('running', 'a', '2026-01-01T00:00:01.000Z'),
      run('running', 'a', '2026-01-01T00:00:01.000Z'),
      run('completed', 'b', '2026-01-01T00:00:03.000Z'),
    ]);

    const events = await collect(watchRun(client, ID));

    expect(calls).toEqual(['poll', 'poll', 'poll']);
    expect(events.map((event) => (event.type === 'run' ? event.run.status : event.progress))).toEqual(['a', 'running', 'b', 'completed']);
  });
});
