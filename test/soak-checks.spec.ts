import { describe, expect, it } from '@jest/globals';
import { checkChain, checkRuns, checkWorkersTakeWork } from '../scripts/soak/checks';
import type { PlannedRun } from '../scripts/soak/plan';
import { liveTakeovers, measureRecovery } from '../scripts/soak/recovery';
import type { RunRow, SoakState, StepRow, TransitionRow } from '../scripts/soak/state';
import { Violations } from '../scripts/soak/violations';
import { expectedValues } from './fixtures/soak.workflow';

const RUN_ID = '01a230b8-72e9-7baf-9699-50ffa6cb475c';
const planned: PlannedRun = { key: 'soak-0', input: { seed: 7, steps: 2, stepMs: 1, sleepMs: 0 }, atMs: 0 };
const [first, second] = expectedValues(planned.input);

const transition = (from: string | null, to: string, revision: number, workerId: string | null = 'w1', at = 1_000 + revision): TransitionRow => ({
  from,
  to,
  revision,
  workerId,
  at,
});
const goodHistory = () => [transition(null, 'queued', 0, null), transition('queued', 'running', 1), transition('running', 'completed', 2)];

/** A run that did everything right: two steps by w1, each journaled once. */
function goodState(): SoakState {
  const run: RunRow = {
    id: RUN_ID,
    key: 'soak-0',
    status: 'completed',
    revision: 2,
    output: { value: second, by: ['w1', 'w1'], completedBy: 'w1' },
    error: null,
    claimedBy: 'w1',
    createdAt: 1_000,
    finishedAt: 1_100,
  };
  const steps: StepRow[] = [
    { key: 'step#1', kind: 'task', seq: 0, status: 'completed', output: { value: first, by: 'w1' }, createdAt: 1_001 },
    { key: 'step#2', kind: 'task', seq: 1, status: 'completed', output: { value: second, by: 'w1' }, createdAt: 1_002 },
  ];
  return {
    runs: [run],
    steps: new Map([[RUN_ID, steps]]),
    transitions: new Map([[RUN_ID, goodHistory()]]),
    executions: new Map([
      [`${RUN_ID} 1`, 1],
      [`${RUN_ID} 2`, 1],
    ]),
    executors: new Map([
      [`${RUN_ID} 1`, new Set(['w1'])],
      [`${RUN_ID} 2`, new Set(['w1'])],
    ]),
  };
}

const checksBroken = (state: SoakState) => {
  const violations = new Violations();
  const figures = checkRuns([planned], state, violations);
  return { figures, checks: violations.list.map((violation) => violation.check) };
};

describe('the soak checks', () => {
  it('pass a run that kept every promise', () => {
    expect(checksBroken(goodState())).toEqual({
      figures: { planned: 1, completedRight: 1, stepsRecorded: 2, stepsExecutedTwice: 0, extraExecutions: 0, invalidChains: 0 },
      checks: [],
    });
  });

  it('count a step executed twice without calling it a violation (at least once)', () => {
    const state = goodState();
    state.executions.set(`${RUN_ID} 2`, 2);
    state.executors.get(`${RUN_ID} 2`)!.add('w2');
    expect(checksBroken(state)).toMatchObject({ figures: { stepsExecutedTwice: 1, extraExecutions: 1, completedRight: 1 }, checks: [] });
  });

  it('catch a second run for one start, a run left unfinished, and a wrong output', () => {
    const duplicated = goodState();
    duplicated.runs.push({ ...duplicated.runs[0], id: '01a230b8-0000-7000-8000-000000000000' });
    expect(checksBroken(duplicated).checks).toEqual(['one run per start']);

    const unfinished = goodState();
    Object.assign(unfinished.runs[0], { status: 'running', revision: 1 });
    unfinished.transitions.get(RUN_ID)!.pop();
    expect(checksBroken(unfinished).checks).toEqual(['valid transition history', 'every run completes']);

    const wrong = goodState();
    wrong.runs[0].output = { value: second + 1, by: ['w1', 'w1'], completedBy: 'w1' };
    expect(checksBroken(wrong).checks).toEqual(['right output']);
  });

  it('catch a missing step, a wrong recorded value, and a result no execution produced', () => {
    const missing = goodState();
    missing.steps.get(RUN_ID)!.pop();
    expect(checksBroken(missing).checks).toContain('each step recorded once');

    const overwritten = goodState();
    overwritten.steps.get(RUN_ID)![0].output = { value: first + 1, by: 'w1' };
    expect(checksBroken(overwritten).checks).toEqual(['each step recorded once']);

    const unexecuted = goodState();
    unexecuted.steps.get(RUN_ID)![1].output = { value: second, by: 'w9' };
    unexecuted.runs[0].output = { value: second, by: ['w1', 'w9'], completedBy: 'w1' };
    expect(checksBroken(unexecuted).checks).toContain('each step recorded once');
  });

  it('catch a step recorded, or a run completed, by a worker that no longer held the run', () => {
    const takenOver = () => {
      const state = goodState();
      const history = state.transitions.get(RUN_ID)!;
      history.splice(2, 1, transition('running', 'running', 2, 'w2', 1_001.5), transition('running', 'completed', 3, 'w2', 1_003));
      Object.assign(state.runs[0], { revision: 3, output: { value: second, by: ['w1', 'w1'], completedBy: 'w2' } });
      return state;
    };
    // w1 recorded step#1 while it held the run, w2 adopted both results and completed it: all fine.
    const fine = takenOver();
    fine.steps.get(RUN_ID)![1].createdAt = 1_001.2;
    expect(checksBroken(fine).checks).toEqual([]);

    // w1's step#2 landed after w2 had taken the run over.
    expect(checksBroken(takenOver()).checks).toEqual(['writes only from the claim holder']);

    const zombieCompletion = takenOver();
    zombieCompletion.steps.get(RUN_ID)![1].createdAt = 1_001.2;
    (zombieCompletion.runs[0].output as { completedBy: string }).completedBy = 'w1';
    expect(checksBroken(zombieCompletion).checks).toEqual(['writes only from the claim holder']);
  });

  it('accept a takeover in a chain, and refuse every broken chain', () => {
    const run = { status: 'completed', revision: 3 };
    const takeover = [
      transition(null, 'queued', 0, null),
      transition('queued', 'running', 1),
      transition('running', 'running', 2, 'w2'),
      transition('running', 'completed', 3, 'w2'),
    ];
    expect(checkChain(run, takeover)).toBeUndefined();
    expect(checkChain(run, takeover.slice(1))).toMatch(/NULL→queued/);
    expect(checkChain(run, [takeover[0], takeover[1], transition('waiting', 'running', 2), takeover[3]])).toMatch(/starts from waiting/);
    expect(checkChain(run, [takeover[0], takeover[1], transition('running', 'running', 1), takeover[3]])).toMatch(/revision 1 after 1/);
    expect(checkChain(run, [...takeover, transition('completed', 'running', 4)])).toMatch(/after the terminal/);
    expect(checkChain({ status: 'completed', revision: 4 }, takeover)).toMatch(/but the run is completed@4/);
  });

  it('measure how soon the runs a killed worker held were taken over, and when throughput came back after an outage', () => {
    const state = goodState();
    const kill = { kind: 'kill-worker' as const, at: 1_001, target: 'w1' };
    state.transitions.get(RUN_ID)!.splice(2, 0, transition('running', 'running', 2, 'w2', 1_040));
    expect(measureRecovery([kill], state.runs, state.transitions, 1, new Set())).toEqual([{ fault: kill, affected: 1, takenOverMs: 39 }]);
    // 20 runs finished before the outage, 20 after it; the one long run is left out of "in flight".
    const runs = Array.from({ length: 40 }, (_, i): RunRow => ({ ...state.runs[0], id: String(i), createdAt: 0, finishedAt: i < 20 ? 500 + i : 5_000 + i }));
    const [outage] = measureRecovery([{ kind: 'crash-postgres', at: 1_000 }], runs, new Map(), 20, new Set(['39']));
    expect(outage).toMatchObject({ affected: 19, inFlightDoneMs: 4_038, throughputBackMs: 3_100 });
  });

  it('tell takeovers from live workers apart from those of killed ones, and find a worker that stopped taking work', () => {
    const history = [transition(null, 'queued', 0, null, 0), transition('queued', 'running', 1, 'w1', 100), transition('running', 'running', 2, 'w2', 3_000)];
    const transitions = new Map([['a', history]]);
    expect(liveTakeovers(transitions, [{ kind: 'kill-worker', at: 1_000, target: 'w1' }], 4_500)).toEqual({ total: 0, unexplained: 0 });
    expect(liveTakeovers(transitions, [], 4_500)).toEqual({ total: 1, unexplained: 1 });
    expect(liveTakeovers(transitions, [{ kind: 'kill-coordinator', at: 2_000, downMs: 500 }], 4_500)).toEqual({ total: 1, unexplained: 0 });

    const lifetimes = new Map([
      ['w2', { from: 0 }],
      ['w3', { from: 0 }],
      ['w4', { from: 2_500 }],
    ]);
    expect(checkWorkersTakeWork(lifetimes, transitions, 4_000, 2_000)).toEqual(['w3']);
  });
});
