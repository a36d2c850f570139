import { isTerminalStatus, type JsonValue, type RunView } from '@nest-durable/common';
import { formatRunLine, formatStepLine } from './format';
import type { CommandContext } from './invocation';
import type { Output } from './output';

/**
 * How often a running run is read again while following it: the feed carries transitions and progress, not the
 * task results a running run records in between.
 */
const REFRESH_MS = 500;

/**
 * Prints the run's status, each step as it is recorded or resolves, and each progress it reports, until the run
 * ends (however long that takes: no deadline); with `--json`, one `{type: 'status'|'step'|'progress', …}` document
 * per line. Follows the run with `client.watch` (the coordinator's live feed, so a run that sleeps or waits costs no
 * requests; polling against a coordinator without one). Returns the run as it ended.
 */
export async function watchRun({ client, output }: CommandContext, runId: string): Promise<RunView> {
  const printer = new RunPrinter(output, runId);
  for await (const event of client.watch(runId, { refreshMs: REFRESH_MS })) {
    if (event.type === 'progress') printer.progress(event.progress, event.at);
    else if (printer.print(event.run)) return event.run;
  }
  throw new Error(`the watch of run ${runId} ended before the run did`);
}

/** Prints what changed since the run was last printed. */
class RunPrinter {
  private readonly printed = new Map<string, string>();
  private status: string | undefined;

  constructor(
    private readonly output: Output,
    private readonly runId: string,
  ) {}

  progress(progress: JsonValue, at: string): void {
    this.output.event({ type: 'progress', runId: this.runId, progress, at }, () => `${at}  progress ${JSON.stringify(progress)}`);
  }

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
