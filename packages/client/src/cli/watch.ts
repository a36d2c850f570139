import { type FeedEvent, isTerminalStatus, type RunView } from '@nest-durable/common';
import { isAnsweredError } from '../json-http.client';
import type { WorkflowClient } from '../workflow.client';
import { formatRunLine, formatStepLine } from './format';
import type { CommandContext } from './invocation';
import type { Output } from './output';

/**
 * How long each poll of a watched run may wait (the coordinator answers at once when the run ends), and how
 * often a running run is read again while following the feed: the feed carries transitions, not the task
 * results a running run records in between.
 */
const POLL_WAIT_MS = 500;

/**
 * Prints the run's status and each step as it is recorded or resolves, until the run ends (however
 * long that takes: no deadline); with `--json`, one `{type: 'status'|'step', …}` document per line.
 * Follows the coordinator's live feed, so a run that sleeps or waits costs no requests; against a
 * coordinator without one (404), polls. Returns the run as it ended.
 */
export async function watchRun({ client, output }: CommandContext, runId: string): Promise<RunView> {
  const printer = new RunPrinter(output, runId);
  const controller = new AbortController();
  try {
    const feed = await openFeed(client, runId, controller.signal);
    return feed ? await follow(client, runId, feed, printer) : await poll(client, runId, printer);
  } finally {
    controller.abort();
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

/** Reads the run after each change the feed announces (and every POLL_WAIT_MS while it runs), until it ends. */
async function follow(client: WorkflowClient, runId: string, feed: AsyncGenerator<FeedEvent>, printer: RunPrinter): Promise<RunView> {
  // Settled unawaited when the run ends (the feed is aborted then): handled here, awaited below.
  const nextEvent = () => {
    const pending = feed.next();
    pending.catch(() => undefined);
    return pending;
  };
  let next = nextEvent();
  for (;;) {
    const run = await client.get(runId);
    if (printer.print(run)) return run;
    let timer: NodeJS.Timeout | undefined;
    const pause = run.status === 'running' ? new Promise<'poll'>((resolve) => (timer = setTimeout(() => resolve('poll'), POLL_WAIT_MS))) : undefined;
    const woken = await Promise.race(pause ? [next, pause] : [next]);
    clearTimeout(timer);
    if (woken === 'poll') continue;
    // The coordinator closed the feed (it is shutting down): go on polling, maybe another one answers.
    if (woken.done) return poll(client, runId, printer);
    next = nextEvent();
  }
}

async function poll(client: WorkflowClient, runId: string, printer: RunPrinter): Promise<RunView> {
  for (;;) {
    const run = await client.waitForResult(runId, { timeoutMs: POLL_WAIT_MS });
    if (printer.print(run)) return run;
  }
}

/** Prints what changed since the run was last printed. */
class RunPrinter {
  private readonly printed = new Map<string, string>();
  private status: string | undefined;

  constructor(
    private readonly output: Output,
    private readonly runId: string,
  ) {}

  /** Prints the run's new status and steps; true once it ended. */
  print(run: RunView): boolean {
    const ended = isTerminalStatus(run.status);
    const { tasks = [], ...fields } = run;
    const printStatus = () => {
      if (run.status === this.status) return;
      this.status = run.status;
      this.output.event({ type: 'status', run: fields }, () => formatRunLine(run));
    };
    // A run's status comes before the steps it recorded in that state; its end comes last.
    if (!ended) printStatus();
    for (const task of tasks) {
      if (this.printed.get(task.key) === task.status) continue;
      this.printed.set(task.key, task.status);
      this.output.event({ type: 'step', runId: this.runId, step: task }, () => formatStepLine(task));
    }
    if (ended) printStatus();
    return ended;
  }
}
