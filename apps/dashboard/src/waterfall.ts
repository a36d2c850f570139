import type { StepKind, TaskView } from '@nest-durable/common';
import { isLostBranch } from './step-kinds';

/** How a bar is drawn: an attempt that failed, the last (or only) try of a task by its outcome, or a wait. */
export type BarTone = 'failed' | 'completed' | 'waiting' | 'waited' | 'marker';

/** One bar of a step's row: where it starts and how long it lasts, on the run's time axis. */
export interface Bar {
  startMs: number;
  durationMs: number;
  tone: BarTone;
  /** What it is, for its tooltip and screen readers: "attempt 2: 31 ms, failed". */
  label: string;
  /** The task attempt it shows, if it shows one. */
  attempt?: number;
}

/** A run's steps on one time axis, from the first start to the last end (or now, while the run goes on). */
export interface Waterfall {
  fromMs: number;
  toMs: number;
  rows: Bar[][];
}

/**
 * The bars of each step: a task's attempts each at its own start with its own duration (failed ones apart from
 * the one that ended it), or the whole task when its worker timed no attempts (an older worker: from its start, or
 * only its end when that is all that is known); a sleep, event, child or retry wait from when the run suspended
 * there to when it resolved, or to `now` while it waits (a group's branch that lost, to when the group resolved);
 * a patch marker, a completion token made and an update applied (while the run waited), each a mark at its record.
 */
export function waterfall(steps: TaskView[], run: { createdAt: string; startedAt: string | null; finishedAt: string | null }, now: number): Waterfall {
  const rows = steps.map((step) => barsOf(step, now));
  const starts = rows.flat().map((bar) => bar.startMs);
  const ends = rows.flat().map((bar) => bar.startMs + bar.durationMs);
  const fromMs = Math.min(Date.parse(run.startedAt ?? run.createdAt), ...starts);
  const toMs = Math.max(run.finishedAt ? Date.parse(run.finishedAt) : now, ...ends, fromMs + 1);
  return { fromMs, toMs, rows };
}

/** The steps that are a moment, not a span: what each records. */
const MARKS: Partial<Record<StepKind, string>> = { patch: 'patch marker recorded', token: 'completion token made', update: 'update applied' };

function barsOf(step: TaskView, now: number): Bar[] {
  const ended = step.finishedAt ? Date.parse(step.finishedAt) : undefined;
  const mark = MARKS[step.kind];
  if (mark) return [{ startMs: Date.parse(step.createdAt), durationMs: 0, tone: 'marker', label: step.status === 'failed' ? `${mark}, failed` : mark }];
  if (step.kind !== 'task') {
    const started = Date.parse(step.startedAt ?? step.createdAt);
    const end = ended ?? now;
    const tone = step.status === 'waiting' ? 'waiting' : 'waited';
    const wait: Bar = {
      startMs: started,
      durationMs: end - started,
      tone,
      label: `${step.kind} ${step.status === 'waiting' ? 'waiting for' : isLostBranch(step) ? 'lost to another branch after' : 'took'} ${ms(end - started)}`,
    };
    // A retry wait whose task has no result yet shows the attempts that failed before it.
    return [...(step.attemptTimes ?? []).map((time) => attemptBar(time, 'failed')), wait];
  }
  if (step.attemptTimes && step.attemptTimes.length > 0) {
    const last = step.attemptTimes.length - 1;
    return step.attemptTimes.map((time, index) => attemptBar(time, index === last && step.status !== 'failed' ? 'completed' : 'failed'));
  }
  const end = ended ?? Date.parse(step.createdAt);
  const started = step.startedAt ? Date.parse(step.startedAt) : end;
  const tone = step.status === 'failed' ? 'failed' : 'completed';
  const label = step.startedAt
    ? `${step.attempts} attempt${step.attempts === 1 ? '' : 's'} took ${ms(end - started)}, ${tone}`
    : `${tone} (its start was not reported)`;
  return [{ startMs: started, durationMs: end - started, tone, label }];
}

function attemptBar(time: NonNullable<TaskView['attemptTimes']>[number], tone: 'failed' | 'completed'): Bar {
  return {
    startMs: Date.parse(time.startedAt),
    durationMs: time.durationMs,
    tone,
    label: `attempt ${time.attempt}: ${ms(time.durationMs)}, ${tone}`,
    attempt: time.attempt,
  };
}

/** A duration in whole milliseconds (the bars' labels: the precision the worker measured). */
const ms = (value: number) => `${Math.round(value).toLocaleString('en')} ms`;
