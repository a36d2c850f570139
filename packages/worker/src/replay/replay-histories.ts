import { readFile } from 'node:fs/promises';
import { InvalidRequestError } from '@nest-durable/common';
import { fetchHistories, parseHistories, type RecordedHistory, type RunStatus, type StoredTask, WorkflowClient } from '@nest-durable/client';
import { NonDeterminismError, type StepDivergence, type WorkflowContext, type WorkflowDefinition, WorkflowError } from '@nest-durable/workflow';
import { workflowDeclarationOf } from '../workflow.decorator';
import { HistoryEndedSignal, ReplayContext } from './replay-context';
import { declaredUpdates } from '../update-handlers';

/** The code under test: a workflow definition, or an instance of a `@Workflow` class (its `run` is the handler). */
// biome-ignore lint/suspicious/noExplicitAny: workflows of any input and output types
export type ReplayedWorkflow = WorkflowDefinition<any, any> | { run(ctx: WorkflowContext, input: any): Promise<unknown> };

/** Where the histories come from. */
export type HistorySource =
  | {
      /** A coordinator (its URL, or a client of it): the runs of the workflow version under test, newest first. */
      coordinator: string | WorkflowClient;
      /** Its CLIENT_TOKEN, with a URL. */
      token?: string;
      /** Only runs in this status, or these (`['queued', 'running', 'waiting']`: the ones a deploy resumes). Default: every status. */
      status?: RunStatus | readonly RunStatus[];
      /** At most this many runs. Default: all. */
      limit?: number;
    }
  /** A file `wf runs export` wrote (JSON lines of {run, steps}). */
  | { file: string }
  /** Histories at hand. */
  | { histories: Iterable<RecordedHistory> | AsyncIterable<RecordedHistory> };

/** How one run's replay ended: the handler returned or threw (`ended`), or it reached the end of the run's history. */
export interface ReplayedRunResult {
  runId: string;
  status: RunStatus;
  stoppedAt: 'history-end' | 'handler-end';
}

/**
 * A run's history and the code under test part: the run, the step (`seq`, and the key and kind of what the
 * history holds there and of what the code now calls, null for none), and the workflow's own
 * NonDeterminismError as `cause`.
 */
export class ReplayDivergenceError extends NonDeterminismError {
  override name = 'ReplayDivergenceError';

  constructor(
    readonly runId: string,
    readonly step: StepDivergence,
    cause: Error,
  ) {
    const recorded = step.recorded ? `${step.recorded.kind} "${step.recorded.key}"` : 'nothing';
    const called = step.called ? `${step.called.kind} "${step.called.key}"` : 'ends there';
    super(`run ${runId} diverges at step ${step.seq}: its history holds ${recorded}, the code now ${step.called ? `calls ${called}` : called}`, step);
    this.cause = cause;
  }
}

/** A run that completed, whose replay by the code under test now throws (its error as `cause`). */
export class ReplayOutcomeError extends WorkflowError {
  override name = 'ReplayOutcomeError';

  constructor(
    readonly runId: string,
    cause: unknown,
  ) {
    super(`run ${runId} completed, but its replay by the code under test throws: ${cause instanceof Error ? cause.message : String(cause)}`, {
      nonRetryable: true,
      reason: 'replay_outcome_changed',
    });
    this.cause = cause;
  }
}

/**
 * Replays recorded histories of a workflow version against the code under test, without side effects: recorded
 * steps answer their recorded results, tasks' functions never run, nothing is written anywhere; a run whose code
 * reaches the end of its recorded history stops there. Rejects with a ReplayDivergenceError on the first run the
 * code diverges from (its steps checked as a worker checks them when it resumes the run), or a ReplayOutcomeError
 * for a run that completed whose replay now throws. Resolves with each run's result. Run it in CI before a deploy: the histories
 * of the runs in flight are the ones the new code meets.
 */
export async function replayHistories(workflow: ReplayedWorkflow, source: HistorySource): Promise<ReplayedRunResult[]> {
  const code = codeUnderTest(workflow);
  const { name, version } = code;
  const results: ReplayedRunResult[] = [];
  for await (const history of historiesOf(source, name, version)) {
    if (history.run.workflow !== name || history.run.version !== version) {
      throw new InvalidRequestError(
        'invalid_history',
        `run ${history.run.id} is of workflow ${history.run.workflow} ${history.run.version}, not of the code under test (${name} ${version})`,
      );
    }
    results.push(await replayRun(history, code.handler, code.updates));
  }
  return results;
}

/** Replays one run's history (see replayHistories). */
export async function replayRun(history: RecordedHistory, handler: ReplayedWorkflowHandler, updates?: ReadonlySet<string>): Promise<ReplayedRunResult> {
  const { run } = history;
  const context = new ReplayContext(run, history.steps.map(storedStep), updates);
  let thrown: unknown;
  let threw = false;
  try {
    await handler(context, run.input);
  } catch (error) {
    [thrown, threw] = [error, true];
  }
  const diverged = (error: unknown): never => {
    if (error instanceof NonDeterminismError && error.divergence) throw new ReplayDivergenceError(run.id, error.divergence, error);
    throw error;
  };
  if (context.stop instanceof NonDeterminismError) return diverged(context.stop);
  if (context.stop instanceof HistoryEndedSignal) return { runId: run.id, status: run.status, stoppedAt: 'history-end' };
  try {
    context.checkEnd();
  } catch (error) {
    diverged(error);
  }
  if (threw && run.status === 'completed') throw new ReplayOutcomeError(run.id, thrown);
  return { runId: run.id, status: run.status, stoppedAt: 'handler-end' };
}

type ReplayedWorkflowHandler = (ctx: WorkflowContext, input: unknown) => Promise<unknown>;

/** The code under test: its name, version, handler and declared updates. */
interface CodeUnderTest {
  name: string;
  version: string;
  handler: ReplayedWorkflowHandler;
  updates: ReadonlySet<string>;
}

function codeUnderTest(workflow: ReplayedWorkflow): CodeUnderTest {
  if ('handler' in workflow) return { name: workflow.name, version: workflow.version, handler: workflow.handler, updates: declaredUpdates(workflow) };
  const declaration = workflowDeclarationOf(workflow.constructor);
  if (!declaration) throw new InvalidRequestError('invalid_workflow', 'replayHistories takes a workflow definition or an instance of a @Workflow class');
  return { name: declaration.name, version: declaration.version, handler: (ctx, input) => workflow.run(ctx, input), updates: declaredUpdates(declaration) };
}

async function* historiesOf(source: HistorySource, workflow: string, version: string): AsyncGenerator<RecordedHistory> {
  if ('histories' in source) {
    yield* source.histories;
  } else if ('file' in source) {
    yield* parseHistories(await readFile(source.file, 'utf8'));
  } else {
    const client = typeof source.coordinator === 'string' ? new WorkflowClient({ url: source.coordinator, token: source.token }) : source.coordinator;
    yield* fetchHistories(client, { workflow, version, status: source.status, limit: source.limit });
  }
}

/** A step as the run's view shows it, as a worker's claim hands it back. */
function storedStep(step: RecordedHistory['steps'][number]): StoredTask {
  return { key: step.key, kind: step.kind, seq: step.seq, status: step.status, attempts: step.attempts, output: step.output, error: step.error };
}
