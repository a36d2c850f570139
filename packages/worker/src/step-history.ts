import type { ErrorDetails, StepKind, StoredTask } from '@nest-durable/common';
import { ChildRunFailedError, ChildRunTimeoutError, InvalidStepError, NonDeterminismError, type StepRef, TaskFailedError } from '@nest-durable/workflow';

const STEP_NAME_MAX_LENGTH = 200;
/** A wait group's branch: `group:<name>#<n>/<index>` (names hold no ':' or '#'). */
const GROUP_BRANCH_KEY = /^group:[^#]*#\d+\/\d+$/;

export interface StepAddress {
  key: string;
  seq: number;
  /** The recorded outcome of this step, when a previous execution got that far. */
  recorded?: StoredTask;
}

/** What `ctx.patched` answers, and the marker to record when the run reached the patch on new ground. */
export interface PatchDecision {
  patched: boolean;
  marker?: { key: string; seq: number };
}

/**
 * Addresses each step of a run deterministically, and checks a re-execution against the recorded
 * history. The n-th task called `name` is `name#n`, the n-th sleep `sleep:name#n` (and so on);
 * `seq` counts every step in call order. If the code now calls a different step at a position the
 * history already holds, replay would mix results, so it fails with NonDeterminismError instead.
 *
 * Patch markers (`patch:id#1`) follow Temporal's rule, at the position the code reaches `ctx.patched(id)`:
 * the history holds the marker there → patched (the marker is consumed); it holds another step there or
 * beyond (older code recorded the run past this point) → not patched, nothing consumed; it ends before
 * here (new ground) → patched, and the marker is to be recorded. A run decides a patch once: later calls
 * with the same id answer the same, and take no position.
 */
export class StepHistory {
  private readonly byKey = new Map<string, StoredTask>();
  private readonly bySeq = new Map<number, StoredTask>();
  private readonly calls = new Map<string, number>();
  private readonly patches = new Map<string, boolean>();
  /** The updates applied at each wait (by the wait's position), in the order they were applied. */
  private readonly updates = new Map<number, StoredTask[]>();
  private updateCount = 0;
  /** The last position the history holds a step at (a retry wait's included: its task was called there). */
  private readonly lastSeq: number;
  private nextSeq = 0;

  constructor(recorded: readonly StoredTask[]) {
    let lastSeq = -1;
    for (const step of recorded) {
      this.byKey.set(step.key, step);
      // A wait group's branches share its position: the group step stands there (once the group resolved).
      if (step.kind === 'update') {
        this.updates.set(step.seq, [...(this.updates.get(step.seq) ?? []), step]);
        this.updateCount++;
      } else if (step.kind !== 'retry' && !GROUP_BRANCH_KEY.test(step.key)) this.bySeq.set(step.seq, step);
      lastSeq = Math.max(lastSeq, step.seq);
    }
    this.lastSeq = lastSeq;
  }

  /**
   * The next step, of `kind` called `name`, at the key its occurrence gives it, or at `key` (the wait on a completion
   * token takes its token's key, whatever order the tokens are awaited in).
   */
  next(kind: Exclude<StepKind, 'retry' | 'patch' | 'update'>, name: string, key = this.keyOf(kind, name)): StepAddress {
    const seq = this.nextSeq++;

    const recorded = this.byKey.get(key);
    const atSeq = this.bySeq.get(seq);
    if ((recorded && (recorded.kind !== kind || recorded.seq !== seq)) || (!recorded && atSeq)) {
      throw divergence(seq, atSeq, { kind, key });
    }
    return { key, seq, recorded };
  }

  /** The key of the next occurrence of a step of `kind` called `name` (`name#n` for a task, `kind:name#n` otherwise). */
  private keyOf(kind: StepKind, name: string): string {
    checkStepName(name);
    const counter = `${kind}:${name}`;
    const occurrence = (this.calls.get(counter) ?? 0) + 1;
    this.calls.set(counter, occurrence);
    return kind === 'task' ? `${name}#${occurrence}` : `${kind}:${name}#${occurrence}`;
  }

  /** `ctx.patched(id)` at the current position (see the class). */
  patch(id: string): PatchDecision {
    checkStepName(id);
    const known = this.patches.get(id);
    if (known !== undefined) return { patched: known };
    const { key, seq, marker } = this.markerAt(id);
    let decision: PatchDecision;
    if (marker) decision = { patched: true };
    else if (this.bySeq.has(seq) || this.lastSeq >= seq) decision = { patched: false };
    else decision = { patched: true, marker: { key, seq } };
    if (decision.patched) this.nextSeq++;
    this.patches.set(id, decision.patched);
    return decision;
  }

  /**
   * `ctx.deprecatePatch(id)`: the patch's old branch is gone, so every run takes the new one. A marker recorded
   * at this position is consumed; none is recorded: runs recorded with and without it both replay.
   */
  deprecatePatch(id: string): void {
    checkStepName(id);
    if (this.patches.has(id)) return;
    if (this.markerAt(id).marker) this.nextSeq++;
    this.patches.set(id, true);
  }

  /** Whether recorded steps lie ahead: the execution is replaying what an earlier one did. */
  get replaying(): boolean {
    return this.nextSeq <= this.lastSeq;
  }

  /**
   * The updates recorded at the wait at position `seq` (they take no position of their own: they happened while the
   * run waited there), in the order they were applied (`update:<name>#<n>`, n counting the run's updates).
   */
  updatesAt(seq: number): StoredTask[] {
    return (this.updates.get(seq) ?? []).sort((a, b) => updateNumber(a.key) - updateNumber(b.key));
  }

  /** The key of the next update the run applies (after every one recorded). */
  nextUpdateKey(name: string): string {
    return `update:${name}#${++this.updateCount}`;
  }

  /** Branch `index` of wait group `groupKey`, as recorded (its key is `<group key>/<index>`). */
  branch(groupKey: string, index: number): StoredTask | undefined {
    return this.byKey.get(`${groupKey}/${index}`);
  }

  /** Steps the coordinator recorded for this execution beyond those it was claimed with (a resolved group's branches). */
  remember(steps: readonly StoredTask[]): void {
    for (const step of steps) this.byKey.set(step.key, step);
  }

  /** The retry-wait record of a task: how many attempts earlier executions already made. */
  retryOf(taskKey: string): StoredTask | undefined {
    return this.byKey.get(`retry:${taskKey}`);
  }

  /**
   * The first recorded step at or after the current position, once the code has returned: a history that holds
   * steps the code no longer reaches was recorded by other code (throws its NonDeterminismError).
   */
  checkEnd(): void {
    for (let seq = this.nextSeq; seq <= this.lastSeq; seq++) {
      const atSeq = this.bySeq.get(seq);
      if (atSeq) throw divergence(seq, atSeq, null);
    }
  }

  /** The marker of patch `id`, if the history holds it: here, or elsewhere (a divergence). */
  private markerAt(id: string): { key: string; seq: number; marker?: StoredTask } {
    const key = `patch:${id}#1`;
    const seq = this.nextSeq;
    const marker = this.byKey.get(key);
    if (marker && marker.seq !== seq) throw divergence(seq, this.bySeq.get(seq), { kind: 'patch', key });
    return { key, seq, marker };
  }
}

function divergence(seq: number, atSeq: StoredTask | undefined, called: StepRef | null): NonDeterminismError {
  const expected = atSeq ? `${atSeq.kind} "${atSeq.key}"` : 'nothing';
  const now = called ? `calls ${called.kind} "${called.key}"` : 'returns there';
  return new NonDeterminismError(
    `step ${seq} of this run's history is ${expected}, but the workflow code now ${now}: ` +
      'the code changed incompatibly while the run was in flight (guard the change with ctx.patched, or deploy it as a new workflow version)',
    { seq, recorded: atSeq ? { kind: atSeq.kind, key: atSeq.key } : null, called },
  );
}

function updateNumber(key: string): number {
  return Number(key.slice(key.lastIndexOf('#') + 1));
}

function checkStepName(name: string): void {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (typeof name !== 'string' || name.length === 0 || name.length > STEP_NAME_MAX_LENGTH || /[\u0000-\u001f:#]/.test(name)) {
    throw new InvalidStepError(`step name must be 1-${STEP_NAME_MAX_LENGTH} characters, without control characters, ':' or '#'`);
  }
}

/** A recorded task's outcome, as every execution (first, replay, or a replay of its history in a test) sees it. */
export function outcomeOf<T>(task: StoredTask, nonRetryable = false): T {
  if (task.status === 'failed') {
    throw new TaskFailedError(task.key, task.error ?? { name: 'Error', message: 'task failed' }, {
      nonRetryable: nonRetryable || task.error?.nonRetryable === true,
    });
  }
  return task.output as T;
}

/** A resolved child step's outcome, as `ctx.child` answers it: the child's output, or why there is none (thrown). */
export function childResultOf<O>(step: StoredTask): O {
  const outcome = step.output as { timedOut: boolean; childId: string; status: string; output: O; error: ErrorDetails | null };
  if (outcome.timedOut) throw new ChildRunTimeoutError(step.key);
  if (outcome.status !== 'completed') throw new ChildRunFailedError(outcome.childId, outcome.status, outcome.error);
  return outcome.output;
}
