import { isTerminalStatus, type RunView } from '../contract';
import { formatRunLine, formatStepLine } from './format';
import type { CommandContext } from './invocation';

/** How long each poll of a watched run may wait; the coordinator answers at once when the run ends. */
const POLL_WAIT_MS = 500;

/**
 * Prints the run's status and each step as it is recorded or resolves, until the run ends (however
 * long that takes: no deadline); with `--json`, one `{type: 'status'|'step', …}` document per line.
 * Returns the run as it ended.
 */
export async function watchRun({ client, output }: CommandContext, runId: string): Promise<RunView> {
  const printed = new Map<string, string>();
  let status: string | undefined;
  for (;;) {
    const run = await client.waitForResult(runId, { timeoutMs: POLL_WAIT_MS });
    const ended = isTerminalStatus(run.status);
    const { tasks = [], ...fields } = run;
    const printStatus = () => {
      if (run.status === status) return;
      status = run.status;
      output.event({ type: 'status', run: fields }, () => formatRunLine(run));
    };
    // A run's status comes before the steps it recorded in that state; its end comes last.
    if (!ended) printStatus();
    for (const task of tasks) {
      if (printed.get(task.key) === task.status) continue;
      printed.set(task.key, task.status);
      output.event({ type: 'step', runId, step: task }, () => formatStepLine(task));
    }
    if (ended) {
      printStatus();
      return run;
    }
  }
}
