import { eventMatchProblem, GROUP_BRANCHES_MAX, type GroupBranch, type GroupOutcome, parseIdentifier, type StoredTask } from '@nest-durable/common';
import { type Branch, InvalidStepError, NonDeterminismError } from '@nest-durable/workflow';
import { checkChild, checkDelay } from './step-checks';
import { childResultOf, outcomeOf } from './step-history';
import { toJson } from './json-values';
import { externalResultOf } from './external-completion';

/*
 * Wait groups (`ctx.any`, `ctx.all`) as a run's execution and a replay of its history both read them: the same
 * checks of the branches, and the same reading of a recorded group (its outcome and its branches' steps).
 */

/** Checks a group's branches before the group is taken, as every step's arguments are (step-checks.ts). */
export function checkBranches(branches: readonly Branch[]): void {
  if (!Array.isArray(branches) || branches.length === 0 || branches.length > GROUP_BRANCHES_MAX) {
    throw new InvalidStepError(
      `a wait group takes a list of 1 to ${GROUP_BRANCHES_MAX} branches (built with branch.event, sleep, task or child, or a completion token's result)`,
    );
  }
  const tokens = new Set<string>();
  for (const [index, branch] of branches.entries()) {
    switch (branch?.kind) {
      case 'event': {
        parseIdentifier(branch.name, 'event_name');
        const problem = branch.match === undefined ? undefined : eventMatchProblem(branch.match);
        if (problem) throw new InvalidStepError(`branch ${index}: ${problem}`);
        break;
      }
      case 'sleep':
        checkDelay(branch.durationMs, `branch ${index}: sleep duration`);
        break;
      case 'task':
        if (typeof branch.fn !== 'function') throw new InvalidStepError(`branch ${index}: a task branch needs a function`);
        break;
      case 'child':
        checkChild(branch.workflow, branch.options ?? {});
        break;
      case 'external':
        // One wait per token: the same `result` twice would be two branches for one completion.
        if (typeof branch.key !== 'string' || tokens.has(branch.key))
          throw new InvalidStepError(`branch ${index}: a completion token's result is a branch once`);
        tokens.add(branch.key);
        break;
      default:
        throw new InvalidStepError(
          `branch ${index} is not a branch: build it with branch.event, branch.sleep, branch.task or branch.child, or pass a completion token's result`,
        );
    }
  }
}

/** An event wait's `match`, checked (an InvalidStepError that says what is wrong). */
export function checkMatch(match: unknown): void {
  const problem = match === undefined ? undefined : eventMatchProblem(match);
  if (problem) throw new InvalidStepError(problem);
}

/** A branch as the worker protocol carries it (a task's outcome given, as its step holds it or as it just ran). */
export function wireBranch(branch: Branch, task?: Pick<StoredTask, 'status' | 'attempts' | 'output' | 'error'>): GroupBranch {
  switch (branch.kind) {
    case 'event':
      return { kind: 'event', name: branch.name, ...(branch.match === undefined ? {} : { match: branch.match }) };
    case 'sleep':
      return { kind: 'sleep', delayMs: branch.durationMs };
    case 'child': {
      const workflow = checkChild(branch.workflow, branch.options ?? {});
      const { shard, tags } = branch.options ?? {};
      return { kind: 'child', workflow: workflow.name, version: workflow.version, input: toJson(branch.input), shard, tags };
    }
    case 'task': {
      const outcome = task!;
      return {
        kind: 'task',
        status: outcome.status === 'failed' ? 'failed' : 'completed',
        attempts: outcome.attempts,
        output: outcome.output,
        error: outcome.error,
      };
    }
    case 'external':
      return { kind: 'external', name: branch.name, key: branch.key };
  }
}

/**
 * What a recorded group resolves with: `any` the winner's index and value, `all` every value (a failed task or child,
 * a failed or timed-out completion token thrown, the first in the list). A group recorded by the other mode is a divergence.
 */
export function groupResultOf(mode: 'any' | 'all', group: StoredTask, branches: readonly Branch[], stepOf: (index: number) => StoredTask | undefined): unknown {
  const outcome = group.output as unknown as GroupOutcome;
  if (outcome.mode !== mode || (mode === 'any' && (outcome.index === undefined || outcome.index >= branches.length))) {
    throw new NonDeterminismError(
      `step ${group.seq} of this run's history is a ctx.${outcome.mode} group "${group.key}", but the workflow code now calls ctx.${mode} there with ${branches.length} branches`,
      { seq: group.seq, recorded: { kind: 'group', key: group.key }, called: { kind: 'group', key: group.key } },
    );
  }
  const branchValueAt = (index: number) => branchValue(branches[index], stepOf(index), group.key, index);
  if (mode === 'any') return { index: outcome.index, value: branchValueAt(outcome.index!) };
  return branches.map((_, index) => index).map(branchValueAt);
}

function branchValue(branch: Branch, step: StoredTask | undefined, groupKey: string, index: number): unknown {
  if (!step || step.kind !== branch.kind) {
    throw new NonDeterminismError(
      `branch ${index} of group "${groupKey}" was recorded as ${step ? `a step of kind ${step.kind}` : 'nothing'}; the code now has a branch of kind ${branch.kind} there`,
      {
        seq: step?.seq ?? -1,
        recorded: step ? { kind: step.kind, key: step.key } : null,
        called: { kind: branch.kind, key: `${groupKey}/${index}` },
      },
    );
  }
  switch (branch.kind) {
    case 'event':
      return (step.output as { data: unknown }).data;
    case 'sleep':
      return null;
    case 'task':
      return outcomeOf(step);
    case 'child':
      return childResultOf(step);
    case 'external':
      return externalResultOf(step);
  }
}
