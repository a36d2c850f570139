import {
  type GroupBranch,
  type GroupOutcome,
  type GroupRequest,
  type GroupResponse,
  type JsonValue,
  groupBranchKey,
  InvalidRequestError,
  PENDING_UPDATES_MAX,
  StepConflictError,
  type StoredTask,
} from '@nest-durable/common';
import {
  type BranchRow,
  consumeEvent,
  Database,
  findGroupBranches,
  findLandedGroupSuspension,
  findPendingUpdates,
  findSteps,
  insertBranch,
  insertChildRun,
  insertResolvedStep,
  type LockedRun,
  lockRunningRun,
  moveTokenWait,
  releaseLosersEvents,
  type SqlExecutor,
  setBranch,
  suspendRun,
  uuidv7,
} from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { conflictFor } from '../runs/conflicts';

type Armed = BranchRow & { index: number };

/**
 * Wait groups (`ctx.any`, `ctx.all`): one transaction under the run's row lock per request. Each request arms the
 * branches not armed yet, then decides: `any` with the branch that finished first (the earliest event sent, child
 * ended, sleep's wake time or task recorded; the first in the list among equals), `all` once every branch finished;
 * otherwise the run suspends until a branch finishes (an event delivered, a child's end, a token completed, the
 * earliest sleep's wake time or token's expiry) and the worker asks again; with updates pending, it does not
 * suspend but gets them, to apply at the group first (a wait like the others: StepRepository.waitOrApplyUpdates). Branch steps wait until the group is decided (a claim leaves them waiting), so an
 * event or a child's end that comes while the run is awake still resolves its branch. The decision is recorded as
 * the group step, so every later execution resolves the group the same way.
 */
@Injectable()
export class GroupRepository {
  constructor(private readonly db: Database) {}

  async wait(runId: string, request: GroupRequest): Promise<GroupResponse> {
    return this.db.transaction(async (tx) => {
      const run = await lockRunningRun(tx, runId, request.expectedRevision);
      if (!run) {
        // Sent again after its answer was lost: the first suspended the run on this group.
        const landed = await findLandedGroupSuspension(tx, runId, request.expectedRevision, request.key);
        if (landed) return { suspended: true, task: landed, branches: [] };
        throw await conflictFor(tx, runId, request.expectedRevision);
      }
      const [recorded] = await findSteps(tx, [{ runId, key: request.key }]);
      if (recorded && recorded.kind !== 'group') throw new StepConflictError(runId, request.key, recorded.kind, 'group');
      if (recorded) return { suspended: false, task: recorded, branches: await this.finished(tx, runId, request.key) };

      const rows = new Map((await findGroupBranches(tx, runId, request.key)).map((row) => [branchIndex(row.key), row]));
      const arm = async (branch: GroupBranch, index: number) => {
        const row = rows.get(index);
        if (row && row.kind !== branch.kind) throw new StepConflictError(runId, row.key, row.kind, branch.kind);
        if (!row) await this.arm(tx, runId, request, branch, index, run);
      };
      // Children go last: an `any` starts none once a branch has finished (it would lose at once).
      for (const [index, branch] of request.branches.entries()) if (branch.kind !== 'child') await arm(branch, index);
      let armed = await this.branches(tx, runId, request.key);
      if (request.mode === 'all' || !armed.some((branch) => branch.settledAt !== null)) {
        for (const [index, branch] of request.branches.entries()) if (branch.kind === 'child') await arm(branch, index);
        armed = await this.branches(tx, runId, request.key);
      }

      const outcome = decide(request.mode, armed);
      if (!outcome) {
        const task = armed.find((branch) => branch.status === 'waiting') ?? armed[0];
        if (await suspendRun(tx, runId, nextWakeInMs(armed), null, true)) return { suspended: true, task, branches: [] };
        return { suspended: false, task, branches: [], updates: await findPendingUpdates(tx, runId, PENDING_UPDATES_MAX) };
      }
      await this.settle(tx, runId, request, armed, outcome.index);
      const task = await insertResolvedStep(tx, { runId, key: request.key, kind: 'group', seq: request.seq, name: request.name, output: { ...outcome } });
      return { suspended: false, task, branches: await this.finished(tx, runId, request.key) };
    });
  }

  /**
   * Arms a branch not armed yet: finished at once (an event kept earlier, a zero sleep, a task's outcome, a token
   * completed or expired) or waiting. A token's wait moves to the branch step (moveTokenWait) while the group waits.
   */
  private async arm(tx: SqlExecutor, runId: string, request: GroupRequest, branch: GroupBranch, index: number, run: LockedRun): Promise<void> {
    const key = groupBranchKey(request.key, index);
    const step = { runId, key, kind: branch.kind, seq: request.seq, name: request.name };
    switch (branch.kind) {
      case 'event': {
        const event = await consumeEvent(tx, runId, branch.name, key, branch.match);
        const output: JsonValue = event ? { timedOut: false, data: event.data } : branch.match ? { match: branch.match } : {};
        await insertBranch(tx, { ...step, name: branch.name, status: event ? 'completed' : 'waiting', output });
        return;
      }
      case 'sleep':
        await insertBranch(tx, { ...step, status: branch.delayMs === 0 ? 'completed' : 'waiting', output: null, delayMs: branch.delayMs });
        return;
      case 'child': {
        const childId = uuidv7();
        await insertChildRun(tx, {
          id: childId,
          workflow: branch.workflow,
          version: branch.version,
          shard: branch.shard === undefined ? run.shard : branch.shard,
          input: branch.input,
          priority: 0,
          idempotencyKey: null,
          runAt: null,
          parentId: runId,
          tags: branch.tags ?? run.tags,
          // In the parent's trace (under its start: a group has no span of the worker's to be started under).
          traceparent: run.traceparent,
          tracestate: run.tracestate,
        });
        await insertBranch(tx, { ...step, status: 'waiting', output: null, childId });
        return;
      }
      case 'task':
        await insertBranch(tx, { ...step, status: branch.status, attempts: branch.attempts, output: branch.output, error: branch.error });
        return;
      case 'external': {
        const token = await moveTokenWait(tx, runId, branch.key, key);
        if (!token) throw new InvalidRequestError('invalid_key', `run ${runId} has no completion token whose wait is ${branch.key}`);
        const output: JsonValue | undefined =
          token.outcome !== null ? { timedOut: false, ...(token.outcome as object) } : token.remainingMs === 0 ? { timedOut: true } : undefined;
        await insertBranch(tx, { ...step, name: branch.name, status: output ? 'completed' : 'waiting', output: output ?? null, delayMs: token.remainingMs });
        return;
      }
    }
  }

  private async branches(tx: SqlExecutor, runId: string, groupKey: string): Promise<Armed[]> {
    return (await findGroupBranches(tx, runId, groupKey)).map((row) => ({ ...row, index: branchIndex(row.key) }));
  }

  /**
   * Once decided, no branch step waits any more. A finished one still waiting (a sleep past its wake time, a token's
   * wait past its expiry: timed out) is completed; the branches that lost an `any` do not fire later: their steps are
   * set lost (a sleep's timer, an event's delivery, a child's end, a completion resolve nothing more), the events they
   * had consumed are kept again for a later wait, and so is a losing token: its wait goes back to its own `external:`
   * step, where a completion is kept (or was: its outcome stays on the token) for `await result` or a later group. A
   * losing child run keeps running (docs/architecture.md, "Matched events and wait groups").
   */
  private async settle(tx: SqlExecutor, runId: string, request: GroupRequest, armed: Armed[], winner: number | undefined): Promise<void> {
    for (const branch of armed) {
      const lost = winner !== undefined && branch.index !== winner;
      if (lost && branch.kind !== 'task') await setBranch(tx, runId, branch.key, 'completed', { lost: true });
      else if (!lost && branch.status === 'waiting')
        await setBranch(tx, runId, branch.key, 'completed', branch.kind === 'external' ? { timedOut: true } : null);
      const wire = request.branches[branch.index];
      if (wire?.kind === 'external') await moveTokenWait(tx, runId, branch.key, wire.key);
    }
    if (winner !== undefined) await releaseLosersEvents(tx, runId, request.key, groupBranchKey(request.key, winner));
  }

  /** The group's branches as the worker reads them back. */
  private async finished(tx: SqlExecutor, runId: string, groupKey: string): Promise<StoredTask[]> {
    return (await findGroupBranches(tx, runId, groupKey)).map(({ key, kind, seq, status, attempts, output, error }) => ({
      key,
      kind,
      seq,
      status,
      attempts,
      output,
      error,
    }));
  }
}

/** `any`: the branch that finished first (the first in the list among equals); `all`: every one finished. */
export function decide(mode: 'any' | 'all', armed: readonly (Pick<BranchRow, 'settledAt'> & { index: number })[]): GroupOutcome | undefined {
  const finished = armed.filter((branch) => branch.settledAt !== null);
  if (mode === 'all') return finished.length === armed.length ? { mode } : undefined;
  if (finished.length === 0) return undefined;
  const first = finished.reduce((best, branch) =>
    branch.settledAt! < best.settledAt! || (branch.settledAt === best.settledAt && branch.index < best.index) ? branch : best,
  );
  return { mode, index: first.index };
}

/** When the run is due again by itself: its earliest waiting sleep's wake time or token's expiry (ms from now), or never (null). */
function nextWakeInMs(armed: readonly BranchRow[]): number | null {
  const wakes = armed.filter((branch) => branch.status === 'waiting' && branch.wakeInMs !== null).map((branch) => branch.wakeInMs!);
  return wakes.length === 0 ? null : Math.max(0, Math.min(...wakes));
}

function branchIndex(key: string): number {
  return Number(key.slice(key.lastIndexOf('/') + 1));
}
