import {
  type GroupBranch,
  type GroupOutcome,
  type GroupRequest,
  type GroupResponse,
  type JsonValue,
  groupBranchKey,
  StepConflictError,
  type StoredTask,
} from '@nest-durable/common';
import {
  type BranchRow,
  consumeEvent,
  Database,
  endedChildOutcome,
  findGroupBranches,
  findLandedGroupSuspension,
  findSteps,
  insertBranch,
  insertChildRun,
  insertResolvedStep,
  lockRunningRun,
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
 * branches not armed yet (or resolved unfinished by a claim that woke the run), then decides: `any` with the branch
 * that finished first (the earliest event sent, child ended, sleep's wake time or task recorded; the first in
 * the list among equals), `all` once every branch finished; otherwise the run suspends until a branch finishes
 * (an event delivered, a child's end, the earliest sleep's wake time) and the worker asks again. The decision is
 * recorded as the group step, so every later execution resolves the group the same way.
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
        await this.arm(tx, runId, request, branch, index, row, run);
      };
      // Children not started yet go last: an `any` starts none once a branch has finished (it would lose at once).
      const unstarted = (branch: GroupBranch, index: number) => branch.kind === 'child' && !rows.has(index);
      for (const [index, branch] of request.branches.entries()) if (!unstarted(branch, index)) await arm(branch, index);
      let armed = await this.branches(tx, runId, request.key);
      if (request.branches.some(unstarted) && (request.mode === 'all' || !armed.some((branch) => branch.settledAt !== null))) {
        for (const [index, branch] of request.branches.entries()) if (unstarted(branch, index)) await arm(branch, index);
        armed = await this.branches(tx, runId, request.key);
      }

      const outcome = decide(request.mode, armed);
      if (!outcome) {
        await suspendRun(tx, runId, nextWakeInMs(armed));
        return { suspended: true, task: armed.find((branch) => branch.status === 'waiting') ?? armed[0], branches: [] };
      }
      if (outcome.index !== undefined) await this.settleLosers(tx, runId, request.key, armed, outcome.index);
      const task = await insertResolvedStep(tx, { runId, key: request.key, kind: 'group', seq: request.seq, name: request.name, output: { ...outcome } });
      return { suspended: false, task, branches: await this.finished(tx, runId, request.key) };
    });
  }

  /** Arms one branch (see the class), unless it finished already. */
  private async arm(
    tx: SqlExecutor,
    runId: string,
    request: GroupRequest,
    branch: GroupBranch,
    index: number,
    row: BranchRow | undefined,
    run: { shard: string | null; tags: Record<string, string> },
  ): Promise<void> {
    if (row && (row.settledAt !== null || branch.kind === 'task')) return;
    const key = groupBranchKey(request.key, index);
    const step = { runId, key, kind: branch.kind, seq: request.seq, name: request.name };
    switch (branch.kind) {
      case 'event': {
        const event = await consumeEvent(tx, runId, branch.name, key, branch.match);
        const status = event ? 'completed' : 'waiting';
        const output: JsonValue = event ? { timedOut: false, data: event.data } : branch.match ? { match: branch.match } : {};
        if (row) await setBranch(tx, runId, key, status, output);
        else await insertBranch(tx, { ...step, name: branch.name, status, output });
        return;
      }
      case 'sleep':
        if (row) await setBranch(tx, runId, key, 'waiting', null);
        else await insertBranch(tx, { ...step, status: branch.delayMs === 0 ? 'completed' : 'waiting', output: null, delayMs: branch.delayMs });
        return;
      case 'child': {
        if (row?.childId) {
          // Armed first, then read: a finish of the child that comes after resolves the armed step itself.
          await setBranch(tx, runId, key, 'waiting', null);
          const ended = await endedChildOutcome(tx, row.childId);
          if (ended) await setBranch(tx, runId, key, 'completed', ended.outcome);
          return;
        }
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
        });
        await insertBranch(tx, { ...step, status: 'waiting', output: null, childId });
        return;
      }
      case 'task':
        await insertBranch(tx, { ...step, status: branch.status, attempts: branch.attempts, output: branch.output, error: branch.error });
        return;
    }
  }

  private async branches(tx: SqlExecutor, runId: string, groupKey: string): Promise<Armed[]> {
    return (await findGroupBranches(tx, runId, groupKey)).map((row) => ({ ...row, index: branchIndex(row.key) }));
  }

  /**
   * The branches that lost an `any` do not fire later: their steps stop waiting (a sleep's timer, an event wait, a
   * child's end no longer resolve anything) and the events they consumed are kept again for a later wait. A losing
   * child run keeps running (docs/architecture.md, "Matched events and wait groups").
   */
  private async settleLosers(tx: SqlExecutor, runId: string, groupKey: string, armed: Armed[], winner: number): Promise<void> {
    for (const branch of armed) {
      if (branch.index !== winner && branch.kind !== 'task') await setBranch(tx, runId, branch.key, 'completed', { lost: true });
    }
    await releaseLosersEvents(tx, runId, groupKey, groupBranchKey(groupKey, winner));
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

/** When the run is due again by itself: its earliest waiting sleep's wake time (ms from now), or never (null). */
function nextWakeInMs(armed: readonly BranchRow[]): number | null {
  const wakes = armed.filter((branch) => branch.kind === 'sleep' && branch.status === 'waiting').map((branch) => branch.wakeInMs!);
  return wakes.length === 0 ? null : Math.max(0, Math.min(...wakes));
}

function branchIndex(key: string): number {
  return Number(key.slice(key.lastIndexOf('/') + 1));
}
