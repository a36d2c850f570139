import type { TaskView } from '@nest-durable/common';

/** A wait group's branch step is keyed `group:<name>#<n>/<index>` (names hold no ':', '#' or '/'). */
const BRANCH_KEY = /^group:([^#]*)#\d+\/(\d+)$/;

/** The wait group a step is a branch of (its name) and its place in it (from 1, as people count), if it is one. */
export function branchOf(step: Pick<TaskView, 'key'>): { group: string; number: number } | undefined {
  const match = BRANCH_KEY.exec(step.key);
  return match ? { group: match[1], number: Number(match[2]) + 1 } : undefined;
}

/** A branch of a `ctx.any` group that another branch beat: its output is `{lost: true}`. */
export function isLostBranch(step: Pick<TaskView, 'key' | 'output'>): boolean {
  const output = step.output as { lost?: unknown } | null;
  return branchOf(step) !== undefined && typeof output === 'object' && output !== null && output.lost === true;
}

/**
 * What a step's output is shown as: a `token` step's output holds the completion token itself, a secret anyone
 * could complete the step with, so the page (a place people screenshot) shows only its prefix.
 */
export function shownOutput(step: Pick<TaskView, 'kind' | 'output'>): unknown {
  if (step.kind !== 'token') return step.output;
  const token = (step.output as { token?: unknown } | null)?.token;
  return { token: typeof token === 'string' ? maskToken(token) : token };
}

/** `wfct_` and dots: the kind of token without any of its secret part. */
export const maskToken = (token: string) => `${token.slice(0, token.indexOf('_') + 1)}••••••••`;
