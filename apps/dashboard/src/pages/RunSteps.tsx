import type { RunView, TaskView } from '@nest-durable/common';
import { Link } from 'wouter-preact';
import { Json } from '../components/Json';
import { Status } from '../components/Status';
import { Time } from '../components/Time';
import { absoluteTime, between, duration } from '../format';
import { branchOf, isLostBranch, shownOutput } from '../step-kinds';
import { type Bar, waterfall } from '../waterfall';

/**
 * The run's steps in the order it recorded them, as a waterfall: each step a row with its bars on one time axis
 * (a task's attempts each at its own start, for its own duration; a wait from its start to its end), and under it
 * the step's times, per-attempt durations, error and output. Failed steps are highlighted.
 */
export function RunSteps({ run }: { run: RunView }) {
  const steps = run.tasks ?? [];
  if (steps.length === 0) return <p class="muted">No steps recorded yet.</p>;
  const axis = waterfall(steps, run, Date.now());
  const span = axis.toMs - axis.fromMs;
  /** A bar's place on the axis, in percent of its width (a moment still shows, as a thin mark). */
  const place = (bar: Bar) => ({ left: `${((bar.startMs - axis.fromMs) / span) * 100}%`, width: `max(3px, ${(bar.durationMs / span) * 100}%)` });
  return (
    <>
      <p class="waterfall-axis muted">
        <span>{absoluteTime(new Date(axis.fromMs).toISOString())}</span>
        <span>{duration(span)} in all</span>
        <span>{absoluteTime(new Date(axis.toMs).toISOString())}</span>
      </p>
      <ol class="timeline" aria-label="Steps">
        {steps.map((step, index) => (
          <li key={step.key} class={`step step-${step.status}`} data-step={step.name}>
            <StepHead step={step} />
            <div class="waterfall-track" role="img" aria-label={`${step.name} on the run's time axis: ${axis.rows[index].map((bar) => bar.label).join('; ')}`}>
              {axis.rows[index].map((bar) => (
                <span
                  key={`${bar.startMs}-${bar.attempt ?? ''}`}
                  class={`waterfall-bar bar-${bar.tone}`}
                  style={place(bar)}
                  title={bar.label}
                  data-attempt={bar.attempt}
                />
              ))}
            </div>
            <StepDetails step={step} />
          </li>
        ))}
      </ol>
    </>
  );
}

function StepHead({ step }: { step: TaskView }) {
  // A task is recorded when it ends (its start only if its worker reported it); a suspension step when the run suspends there.
  const [started, ended] = stepTimes(step);
  return (
    <div class="step-head">
      <span class="step-kind">{step.kind}</span> <strong class="step-name">{step.name}</strong> <Status status={step.status} />
      <span class="muted">
        {' '}
        {/* A patch marker is not tried: it records which branch of a ctx.patched change the run takes. */}
        {step.kind === 'patch'
          ? ' · the run takes the patched branch'
          : [
              STEP_NOTES[step.kind],
              branchNote(step),
              step.kind !== 'update' && step.kind !== 'token' && step.attempts > 0 && ` · ${step.attempts} attempt${step.attempts === 1 ? '' : 's'}`,
              between(started, ended) && ` · took ${between(started, ended)}`,
            ]}
      </span>
    </div>
  );
}

function StepDetails({ step }: { step: TaskView }) {
  const [started, ended] = stepTimes(step);
  return (
    <>
      <div class="step-times">
        {[
          started && ['started', <Time at={started} compact key="s" />],
          ended && ['ended', <Time at={ended} compact key="e" />],
          step.wakeAt && step.status === 'waiting' && ['wakes', <Time at={step.wakeAt} compact key="w" />],
          step.childId && [
            'child',
            <Link href={`/runs/${step.childId}`} class="mono" key="c">
              {step.childId}
            </Link>,
          ],
        ]
          .filter((part): part is [string, preact.JSX.Element] => !!part)
          .map(([label, value], index) => (
            <span key={label}>
              {index > 0 && ' · '}
              {label} {value}
            </span>
          ))}
      </div>
      {step.attemptTimes && step.attemptTimes.length > 1 && (
        <ol class="attempts" aria-label={`Attempts of ${step.name}`}>
          {step.attemptTimes.map((time, index, all) => (
            <li key={time.attempt} class={index < all.length - 1 || step.status === 'failed' ? 'attempt-failed' : 'attempt-completed'}>
              attempt {time.attempt}: {duration(time.durationMs)}
            </li>
          ))}
        </ol>
      )}
      {step.error && (
        <p class="step-error">
          <strong>{step.error.name}</strong>: {step.error.message}
        </p>
      )}
      {step.output !== null && step.output !== undefined && <Json label="Output" value={shownOutput(step)} />}
    </>
  );
}

/** What a step of a kind that is not a task or a plain wait is, said after its name. */
const STEP_NOTES: Partial<Record<TaskView['kind'], string>> = {
  token: ' · completion token made (shown masked)',
  external: ' · waits for its completion token',
  update: ' · applied while the run waited',
  group: ' · waits for its branches',
};

/** A wait group's branch: which group, which branch, and whether another branch won first. */
function branchNote(step: TaskView): string | undefined {
  const branch = branchOf(step);
  if (!branch) return undefined;
  return ` · branch ${branch.number} of group ${branch.group}${isLostBranch(step) ? ', lost to another branch' : ''}`;
}

/** When a step began and ended, as far as is known (a task's start only if its worker reported it). */
function stepTimes(step: TaskView): [string | undefined, string | undefined] {
  const started = step.startedAt ?? (step.kind === 'task' ? undefined : step.createdAt);
  const ended = step.finishedAt ?? (step.kind === 'task' ? step.createdAt : undefined);
  return [started, ended];
}
