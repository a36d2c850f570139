import { describe, expect, it } from '@jest/globals';
import { RevisionConflictError, type WorkerReport } from '@nest-durable/common';
import { ReportAnswerError, type ReportRepository } from '@app/run-store';
import { type NotificationListener, RUN_FINISHED_CHANNEL } from '@app/outbox';
import type { Database, SqlExecutor } from '@app/persistence';
import type { CoordinatorConfig } from '../config/coordinator.config';
import { ResultWaits } from '../hand-off/result-waits.service';
import { RunLifecycle } from '../hand-off/run-lifecycle.service';
import { WaitingClaims } from '../hand-off/waiting-claims.service';
import type { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import { ReportsService } from './reports.service';

const RUN = '01a23292-e466-76ce-9ad8-c86c6dd448fb';

/** ReportsService, with the RunLifecycle it tells, over stand-ins that accept every write, keeping what they were asked. */
function service() {
  const woken: [string, string, number][] = [];
  /** Runs a client waits for (a result long-poll woken by their end). */
  const waiting = new Set<string>();
  const calls: string[] = [];
  const tx: SqlExecutor = { query: async () => [] };
  const stale = new Set<string>();
  /** What the next statement throws, if anything (once). */
  const failing: { next?: Error } = {};
  const throwIfFailing = () => {
    const error = failing.next;
    failing.next = undefined;
    if (error) throw error;
  };
  const reports = {
    recordTask: async () => {
      calls.push('record one');
      throwIfFailing();
      return { key: 'a#1', kind: 'task', seq: 0, status: 'completed', attempts: 1, output: 1, error: null };
    },
    lockInOrder: async (runIds: string[]) => calls.push(`lock ${runIds.length}`),
    recordTasks: async (items: unknown[], refreshAfterMs: number, _on: unknown, finishing: string[]) => {
      calls.push(`record ${items.length}, finishing ${finishing.length}, refresh after ${refreshAfterMs} ms`);
      return (items as { runId: string }[]).map(({ runId }) =>
        stale.has(runId) ? new RevisionConflictError(runId, 3) : { key: 'a#1', kind: 'task', seq: 0, status: 'completed', attempts: 1, output: 1, error: null },
      );
    },
    finishMany: async (items: unknown[]) => {
      calls.push(`finish ${items.length}`);
      return items.map(() => ({ revision: 4, workflow: 'chain' }));
    },
    finish: async () => ({ revision: 4, workflow: 'chain' }),
    recordTasksAndFinish: async (items: { runId: string }[], outcomes: unknown[]) => {
      calls.push(`record ${items.length} and finish ${outcomes.length}`);
      throwIfFailing();
      return {
        tasks: items.map(({ runId }) =>
          stale.has(runId)
            ? new RevisionConflictError(runId, 3)
            : { key: 'a#1', kind: 'task', seq: 0, status: 'completed', attempts: 1, output: 1, error: null },
        ),
        outcomes: (outcomes as { runId: string }[]).map(({ runId }) =>
          stale.has(runId) ? new RevisionConflictError(runId, 3) : { revision: 4, workflow: 'chain' },
        ),
      };
    },
  };
  const db = {
    transaction: async <T>(work: (on: SqlExecutor) => Promise<T>) => {
      calls.push('transaction');
      return work(tx);
    },
    query: tx.query,
  };
  const counter = { inc: () => undefined };
  const resultWaits = new ResultWaits();
  const config = { claimMinIdleTimeMs: 90_000 } as CoordinatorConfig;
  const lifecycle = new RunLifecycle(
    new WaitingClaims(),
    resultWaits,
    {
      wake: (channel: string, payload: string, max: number) => {
        woken.push([channel, payload, max]);
        return waiting.has(payload) ? 1 : 0;
      },
    } as unknown as NotificationListener,
    { runsCompleted: counter, runsFailed: counter } as unknown as CoordinatorMetrics,
    reports as unknown as ReportRepository,
    config,
  );
  const writes = new ReportsService(reports as unknown as ReportRepository, db as unknown as Database, lifecycle, config);
  return { writes, woken, calls, stale, waiting, resultWaits, failing };
}

const task: WorkerReport = {
  type: 'task',
  runId: RUN,
  task: { expectedRevision: 3, key: 'a#1', seq: 0, name: 'a', status: 'completed', attempts: 1, output: 1, error: null },
};
const complete: WorkerReport = { type: 'complete', runId: RUN, complete: { expectedRevision: 3, output: { steps: 1 } } };

describe('ReportsService', () => {
  it("a run's last task result and its outcome: one statement, no transaction, and its result waits woken", async () => {
    const { writes, woken, calls } = service();
    const outcomes = await writes.apply([task, complete]);
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true]);
    expect(calls).toEqual(['record 1 and finish 1']);
    expect(woken).toEqual([[RUN_FINISHED_CHANNEL, RUN, Number.POSITIVE_INFINITY]]);
  });

  it('a one-statement batch whose answer could not be read after it committed fails the request; it is not applied again one by one', async () => {
    const { writes, calls, failing } = service();
    failing.next = new ReportAnswerError(new Error('canceling statement due to statement timeout'));
    await expect(writes.apply([task, complete])).rejects.toBeInstanceOf(ReportAnswerError);
    expect(calls).toEqual(['record 1 and finish 1']);
  });

  it('a lone report whose answer could not be read after it committed fails the request too (not a refusal of its run)', async () => {
    const { writes, failing } = service();
    failing.next = new ReportAnswerError(new Error('canceling statement due to statement timeout'));
    await expect(writes.apply([task])).rejects.toBeInstanceOf(ReportAnswerError);
  });

  it('a one-statement batch the database refused (nothing written) is applied one by one', async () => {
    const { writes, calls, failing } = service();
    failing.next = new Error('invalid input syntax for type json');
    const outcomes = await writes.apply([task, complete]);
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true]);
    expect(calls).toEqual(['record 1 and finish 1', 'record one']);
  });

  it('a lone completion wakes the waits for its result too', async () => {
    const { writes, woken } = service();
    await writes.apply([complete]);
    expect(woken).toEqual([[RUN_FINISHED_CHANNEL, RUN, Number.POSITIVE_INFINITY]]);
  });

  it('answers a turn later when every report is of a run a client waits for (the result goes first), at once otherwise', async () => {
    const other = '01a23292-e466-76ce-9ad8-c86c6dd448fc';
    const answeredWithinTurn = async (batch: WorkerReport[], awaited: string[]) => {
      const { writes, waiting } = service();
      for (const runId of awaited) waiting.add(runId);
      let turned = false;
      setImmediate(() => (turned = true));
      await writes.apply(batch);
      return !turned;
    };
    expect(await answeredWithinTurn([task, complete], [RUN])).toBe(false);
    expect(await answeredWithinTurn([task, complete], [])).toBe(true);
    // Another run's task result in the batch: its worker's next step waits for this answer.
    expect(await answeredWithinTurn([complete, { ...task, runId: other }], [RUN])).toBe(true);
  });

  it('lets the result go first to a client whose wait was armed here while the finish was under way (handed the run, not woken)', async () => {
    const { writes, resultWaits } = service();
    let answered = false;
    const applied = writes.apply([task, complete]).then(() => (answered = true));
    // The client's GET arrives after the report: its wait settles on the report's end instead of reading the run.
    const wait = resultWaits.arm(RUN);
    const result = wait.settled(1_000).then(() => ({ answeredFirst: answered, handed: wait.finished !== undefined || wait.ended }));
    await expect(result).resolves.toEqual({ answeredFirst: false, handed: true });
    await applied;
    wait.release();
  });

  it('the reports of several runs are locked in id order first', async () => {
    const { writes, calls } = service();
    const other = '01a23292-e466-76ce-9ad8-c86c6dd448fc';
    await writes.apply([task, { ...complete, runId: other }]);
    expect(calls).toEqual(['transaction', 'lock 2', 'record 1, finishing 1, refresh after 9000 ms', 'finish 1']);
  });

  it('task results alone are one statement too (no transaction); outcomes alone keep theirs (their generic plan)', async () => {
    const other = '01a23292-e466-76ce-9ad8-c86c6dd448fc';
    const { writes, calls } = service();
    await writes.apply([task, { ...task, runId: other }]);
    await writes.apply([complete, { ...complete, runId: other }]);
    expect(calls).toEqual(['record 2, finishing 0, refresh after 9000 ms', 'transaction', 'finish 2']);
  });

  it("an outcome whose run has task results here at another revision too (an older execution's) is not one statement with them", async () => {
    const { writes, calls } = service();
    await writes.apply([{ ...task, task: { ...task.task, expectedRevision: 2 } }, task, complete]);
    expect(calls).toEqual(['transaction', 'record 2, finishing 1, refresh after 9000 ms', 'finish 1']);
  });

  it("several runs' last task results with their outcomes are one statement, which locks each in id order", async () => {
    const other = '01a23292-e466-76ce-9ad8-c86c6dd448fc';
    const batch = [task, { ...task, runId: other }, complete, { ...complete, runId: other }];
    const { writes, calls } = service();
    await writes.apply(batch);
    expect(calls).toEqual(['record 2 and finish 2']);
    // An outcome at another revision than its run's task result: that statement may not have locked it.
    const { writes: again, calls: againCalls } = service();
    await again.apply([...batch.slice(0, 3), { ...complete, runId: other, complete: { expectedRevision: 4, output: null } }]);
    expect(againCalls).toEqual(['transaction', 'lock 2', 'record 2, finishing 2, refresh after 9000 ms', 'finish 2']);
  });

  it("a run's outcome is refused with a task result before it in the batch, and not written", async () => {
    const { writes, woken, calls, stale } = service();
    stale.add(RUN);
    const outcomes = await writes.apply([task, complete]);
    expect(outcomes).toEqual([
      expect.objectContaining({ ok: false, statusCode: 409, reason: 'revision_conflict' }),
      expect.objectContaining({ ok: false, statusCode: 409, reason: 'revision_conflict' }),
    ]);
    expect(calls).toEqual(['record 1 and finish 1']);
    expect(woken).toEqual([]);
  });
});
