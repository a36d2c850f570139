import { type FeedEvent, isTerminalStatus, type JsonValue, type RunView } from '@nest-durable/common';
import { isAnsweredError } from './json-http.client';
import type { WorkflowClient } from './workflow.client';

/**
 * What `WorkflowClient.watch` yields: `run`, the run as read (with its steps) when it is first read and after each
 * change the feed announces (and every `refreshMs` while it runs, if asked), the last one terminal; `progress`, each
 * progress the run reports (`ctx.progress`), as it is recorded, oldest first and never twice.
 */
export type WatchEvent = { type: 'run'; run: RunView } | { type: 'progress'; runId: string; progress: JsonValue; at: string };

export interface WatchOptions {
  /** Stops watching: iteration throws the signal's reason. */
  signal?: AbortSignal;
  /**
   * Also read the run every this many ms while it runs (task results recorded inside the running state are no
   * transition: the feed does not announce them; a sleeping or waiting run is not read again). Default: only on
   * changes.
   */
  refreshMs?: number;
}

/** How long each poll waits when the coordinator has no live feed (it answers at once when the run ends). */
const POLL_WAIT_MS = 500;

/**
 * Follows one run until it ends (see WatchEvent): through the coordinator's live feed, opened before the run is
 * first read so nothing committed after that read is missed; against a coordinator without one (404), or once the
 * feed closes (that coordinator shutting down), by polling. A run that sleeps for a day costs no requests meanwhile.
 */
export async function* watchRun(client: WorkflowClient, runId: string, options: WatchOptions = {}): AsyncGenerator<WatchEvent, void> {
  const controller = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
  const seen = new ProgressSeen(runId);
  try {
    const feed = await openFeed(client, runId, signal);
    if (feed) {
      const ended = yield* follow(client, runId, feed, seen, options.refreshMs);
      if (ended) return;
    }
    yield* poll(client, runId, seen, signal, options.refreshMs !== undefined);
  } finally {
    controller.abort();
  }
}

/** The last progress yielded, so a value read back from the run after its event is not yielded again. */
class ProgressSeen {
  private at = '';

  constructor(private readonly runId: string) {}

  /** The progress event of `at`, unless one as recent was yielded already. */
  event(progress: JsonValue, at: string | null): WatchEvent[] {
    if (at === null || at <= this.at) return [];
    this.at = at;
    return [{ type: 'progress', runId: this.runId, progress, at }];
  }
}

/** The run's feed once open; undefined if the coordinator has none. */
async function openFeed(client: WorkflowClient, runId: string, signal: AbortSignal): Promise<AsyncGenerator<FeedEvent> | undefined> {
  const feed = client.feed({ runId }, signal);
  try {
    await feed.next();
    return feed;
  } catch (error) {
    if (isAnsweredError(error) && error.statusCode === 404) return undefined;
    throw error;
  }
}

/** Reads the run after each change the feed announces, until it ends (true) or the feed closes (false). */
async function* follow(
  client: WorkflowClient,
  runId: string,
  feed: AsyncGenerator<FeedEvent>,
  seen: ProgressSeen,
  refreshMs: number | undefined,
): AsyncGenerator<WatchEvent, boolean> {
  // Settled unawaited when the watch ends (the feed is aborted then): handled here, awaited below.
  const nextEvent = () => {
    const pending = feed.next();
    pending.catch(() => undefined);
    return pending;
  };
  let next = nextEvent();
  let read = true;
  let running = false;
  for (;;) {
    if (read) {
      const run = await client.get(runId);
      // Its progress first: the run (the terminal one last of all) is what ends the watch.
      yield* seen.event(run.progress, run.progressAt);
      yield { type: 'run', run };
      if (isTerminalStatus(run.status)) return true;
      running = run.status === 'running';
      read = false;
    }
    // Only a running run records steps the feed does not announce: a sleeping one costs no requests.
    let timer: NodeJS.Timeout | undefined;
    const pause = refreshMs === undefined || !running ? [] : [new Promise<'refresh'>((resolve) => (timer = setTimeout(() => resolve('refresh'), refreshMs)))];
    const woken = await Promise.race([next, ...pause]);
    clearTimeout(timer);
    if (woken === 'refresh') {
      read = true;
      continue;
    }
    if (woken.done) return false;
    next = nextEvent();
    if (woken.value.type === 'progress') yield* seen.event(woken.value.data.progress, woken.value.data.at);
    else read = true;
  }
}

/** Polls the run (each poll a long-poll that answers when it ends); `run` when it changed state, or at every poll if `everyRead`. */
async function* poll(client: WorkflowClient, runId: string, seen: ProgressSeen, signal: AbortSignal, everyRead: boolean): AsyncGenerator<WatchEvent> {
  let state = '';
  for (;;) {
    const run = await client.waitForResult(runId, { timeoutMs: POLL_WAIT_MS, signal });
    yield* seen.event(run.progress, run.progressAt);
    if (everyRead || `${run.status} ${run.revision}` !== state) yield { type: 'run', run };
    state = `${run.status} ${run.revision}`;
    if (isTerminalStatus(run.status)) return;
  }
}
