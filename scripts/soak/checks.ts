import { isDeepStrictEqual } from 'node:util';
import { expectedValues, type SoakOutput, type SoakStepResult } from '../../test/fixtures/soak.workflow';
import type { PlannedRun } from './plan';
import type { RunRow, SoakState, TransitionRow } from './state';
import type { Violations } from './violations';

export interface CheckFigures {
  planned: number;
  completedRight: number;
  /** Task steps recorded, and how many of them executed more than once (at least once is the promise). */
  stepsRecorded: number;
  stepsExecutedTwice: number;
  extraExecutions: number;
  invalidChains: number;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * The promises, checked run by run against what the database and the journals hold. Each broken
 * one is added to `violations` with the run's id; the evidence (rows, log lines) is added later.
 */
export function checkRuns(plan: PlannedRun[], state: SoakState, violations: Violations): CheckFigures {
  const byKey = new Map<string, RunRow[]>();
  for (const run of state.runs) byKey.set(run.key ?? '', [...(byKey.get(run.key ?? '') ?? []), run]);
  const figures: CheckFigures = { planned: plan.length, completedRight: 0, stepsRecorded: 0, stepsExecutedTwice: 0, extraExecutions: 0, invalidChains: 0 };

  for (const planned of plan) {
    const runs = byKey.get(planned.key) ?? [];
    if (runs.length !== 1) {
      violations.add('one run per start', `key ${planned.key}: ${runs.length} runs (${runs.map((run) => run.id).join(', ')})`);
      continue;
    }
    const [run] = runs;
    const values = expectedValues(planned.input);
    const steps = (state.steps.get(run.id) ?? []).filter((step) => step.kind === 'task');
    figures.stepsRecorded += steps.length;
    for (let step = 1; step <= planned.input.steps; step++) {
      const executed = state.executions.get(`${run.id} ${step}`) ?? 0;
      if (executed > 1) {
        figures.stepsExecutedTwice++;
        figures.extraExecutions += executed - 1;
      }
    }

    const stepProblem = checkSteps(run.id, planned, steps, values, state);
    if (stepProblem) violations.add('each step recorded once', `run ${run.id} (${planned.key}): ${stepProblem}`);
    const chainProblem = checkChain(run, state.transitions.get(run.id) ?? []);
    if (chainProblem) {
      figures.invalidChains++;
      violations.add('valid transition history', `run ${run.id} (${planned.key}): ${chainProblem}`);
    }
    const output = run.output as SoakOutput | null;
    const expected = { value: values.at(-1)!, by: steps.map((step) => (step.output as SoakStepResult).by) };
    const fencing = checkFencing(run, output, state);
    if (fencing) violations.add('writes only from the claim holder', `run ${run.id} (${planned.key}): ${fencing}`);
    if (run.status !== 'completed') {
      violations.add('every run completes', `run ${run.id} (${planned.key}) is ${run.status}${run.error ? `: ${JSON.stringify(run.error)}` : ''}`);
    } else if (!isDeepStrictEqual({ value: output?.value, by: output?.by }, expected)) {
      violations.add('right output', `run ${run.id} (${planned.key}): output ${JSON.stringify(run.output)}, expected ${JSON.stringify(expected)}`);
    } else if (!stepProblem && !fencing) {
      figures.completedRight++;
    }
  }
  const planned = new Set(plan.map((run) => run.key));
  for (const run of state.runs)
    if (!planned.has(run.key ?? '')) violations.add('one run per start', `run ${run.id} with key ${run.key} was never started by the soak`);
  return figures;
}

/** Steps step#1..step#n, each once, completed, with the right value, from a worker that executed it; the sleep if planned. */
function checkSteps(
  runId: string,
  planned: PlannedRun,
  steps: { key: string; status: string; output: unknown }[],
  values: number[],
  state: SoakState,
): string | undefined {
  const keys = steps.map((step) => step.key);
  const expectedKeys = values.map((_, i) => `step#${i + 1}`);
  if (!isDeepStrictEqual([...keys].sort(), [...expectedKeys].sort())) return `task steps ${JSON.stringify(keys)}, expected ${JSON.stringify(expectedKeys)}`;
  for (const step of steps) {
    const n = Number(step.key.slice('step#'.length));
    const result = step.output as SoakStepResult | null;
    if (step.status !== 'completed' || result?.value !== values[n - 1])
      return `${step.key} is ${step.status} with ${JSON.stringify(result)}, expected value ${values[n - 1]}`;
    if (!state.executors.get(`${runId} ${n}`)?.has(result.by)) {
      return `${step.key} was recorded as executed by ${result.by}, whose journal has no execution of it (executed by ${[...(state.executors.get(`${runId} ${n}`) ?? [])].join(', ') || 'nobody'})`;
    }
  }
  const sleeps = (state.steps.get(runId) ?? []).filter((step) => step.kind === 'sleep');
  const expectedSleeps = planned.input.sleepMs > 0 ? ['sleep:pause#1'] : [];
  if (
    !isDeepStrictEqual(
      sleeps.map((step) => step.key),
      expectedSleeps,
    ) ||
    sleeps.some((step) => step.status !== 'completed')
  ) {
    return `sleep steps ${JSON.stringify(sleeps)}, expected ${JSON.stringify(expectedSleeps)} completed`;
  }
  return undefined;
}

/**
 * Revision fencing, seen from outside: each step was recorded, and the run completed, by the worker
 * that held the claim at that moment (its latest claim by the database clock). A zombie whose
 * write got through despite a newer claim shows up here.
 */
function checkFencing(run: RunRow, output: SoakOutput | null, state: SoakState): string | undefined {
  const history = state.transitions.get(run.id) ?? [];
  const holderAt = (at: number) => history.filter((transition) => transition.at <= at && transition.to === 'running').at(-1)?.workerId;
  for (const step of (state.steps.get(run.id) ?? []).filter((candidate) => candidate.kind === 'task')) {
    const by = (step.output as SoakStepResult | null)?.by;
    const holder = holderAt(step.createdAt);
    if (by !== holder) return `${step.key} was recorded at ${new Date(step.createdAt).toISOString()} with the result of ${by}, while ${holder} held the run`;
  }
  if (run.status !== 'completed') return undefined;
  const terminal = history.length - 1;
  const holder = history[terminal - 1]?.to === 'running' ? history[terminal - 1].workerId : undefined;
  if (output?.completedBy !== holder) return `completed with the output of ${output?.completedBy}'s execution, while ${holder} held the run`;
  return undefined;
}

/** NULL→queued first, each from = the previous to, revisions strictly increasing, ending terminal at the run's revision. */
export function checkChain(run: Pick<RunRow, 'status' | 'revision'>, transitions: TransitionRow[]): string | undefined {
  const show = () => transitions.map((t) => `${t.from ?? 'NULL'}→${t.to}@${t.revision}`).join(' ');
  const [first] = transitions;
  if (!first || first.from !== null || first.to !== 'queued') return `does not start with NULL→queued: ${show()}`;
  for (let i = 1; i < transitions.length; i++) {
    const [previous, current] = [transitions[i - 1], transitions[i]];
    if (current.from !== previous.to) return `transition ${i + 1} starts from ${current.from} after ${previous.to}: ${show()}`;
    if (current.revision <= previous.revision) return `revision ${current.revision} after ${previous.revision}: ${show()}`;
    if (TERMINAL.has(previous.to)) return `a transition after the terminal ${previous.to}: ${show()}`;
  }
  const last = transitions.at(-1)!;
  if (!TERMINAL.has(last.to)) return `ends at ${last.to}, not terminal: ${show()}`;
  if (last.to !== run.status || last.revision !== run.revision)
    return `ends at ${last.to}@${last.revision} but the run is ${run.status}@${run.revision}: ${show()}`;
  return undefined;
}

/**
 * Every worker that lived through the last `windowMs` of the load took work in it: a worker whose
 * consume loop died or hung after a fault (while its process lives on) shows up here.
 */
export function checkWorkersTakeWork(
  lifetimes: Map<string, { from: number; to?: number }>,
  transitions: Map<string, TransitionRow[]>,
  loadEnd: number,
  windowMs: number,
): string[] {
  const from = loadEnd - windowMs;
  const claimed = new Set<string>();
  for (const history of transitions.values()) {
    for (const transition of history)
      if (transition.to === 'running' && transition.at >= from && transition.at <= loadEnd) claimed.add(transition.workerId ?? '');
  }
  return [...lifetimes].filter(([worker, life]) => life.from <= from && (life.to ?? Infinity) >= loadEnd && !claimed.has(worker)).map(([worker]) => worker);
}
