import type { StepKind, StoredTask } from '@nest-durable/common';
import { NonDeterminismError } from '@nest-durable/workflow';

export interface StepAddress {
  key: string;
  seq: number;
  /** The recorded outcome of this step, when a previous execution got that far. */
  recorded?: StoredTask;
}

/**
 * Addresses each step of a run deterministically, and checks a re-execution against the recorded
 * history. The n-th task called `name` is `name#n`, the n-th sleep `sleep:name#n` (and so on);
 * `seq` counts every step in call order. If the code now calls a different step at a position the
 * history already holds, replay would mix results, so it fails with NonDeterminismError instead.
 */
export class StepHistory {
  private readonly byKey = new Map<string, StoredTask>();
  private readonly bySeq = new Map<number, StoredTask>();
  private readonly calls = new Map<string, number>();
  private nextSeq = 0;

  constructor(recorded: StoredTask[]) {
    for (const step of recorded) {
      this.byKey.set(step.key, step);
      if (step.kind !== 'retry') this.bySeq.set(step.seq, step);
    }
  }

  next(kind: Exclude<StepKind, 'retry'>, name: string): StepAddress {
    const seq = this.nextSeq++;
    const counter = `${kind}:${name}`;
    const occurrence = (this.calls.get(counter) ?? 0) + 1;
    this.calls.set(counter, occurrence);
    const key = kind === 'task' ? `${name}#${occurrence}` : `${kind}:${name}#${occurrence}`;

    const recorded = this.byKey.get(key);
    const atSeq = this.bySeq.get(seq);
    if ((recorded && (recorded.kind !== kind || recorded.seq !== seq)) || (!recorded && atSeq)) {
      const expected = atSeq ? `${atSeq.kind} "${atSeq.key}"` : 'nothing';
      throw new NonDeterminismError(
        `step ${seq} of this run's history is ${expected}, but the workflow code now calls ${kind} "${key}": ` +
          'the code changed incompatibly while the run was in flight (deploy it as a new workflow version)',
      );
    }
    return { key, seq, recorded };
  }

  /** The retry-wait record of a task: how many attempts earlier executions already made. */
  retryOf(taskKey: string): StoredTask | undefined {
    return this.byKey.get(`retry:${taskKey}`);
  }
}
