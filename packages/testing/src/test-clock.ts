import {
  advanceTestClockTo,
  announceDueRuns,
  databaseNow,
  installTestClock,
  nextDueTime,
  type SqlExecutor,
  sessionExecutor,
  unsettledWork,
} from '@app/persistence';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from 'pg';
import { TestEnvironmentError } from './test-environment.error';

/** How often the clock looks whether the engine has handed on what came due (a read of one index range). */
const SETTLE_POLL_MS = 5;
/** The runs and schedules named when the engine does not settle in time. */
const NAMED = 5;

/** What moves the coordinator's due timers: its DueTimers, in the test's process. */
export interface DueTimesFollower {
  resync(): Promise<void>;
}

/**
 * The clock of a test environment's database (see TEST_CLOCK_SCHEMA in libs/persistence): every due time of the
 * engine is kept in it, so moving it forward is what makes a week pass. `skip` steps through the due times within
 * the window in order: it moves the clock to the next one, has the coordinator fire it (its due timers refit the
 * clock and reload, and runs now due are announced on the channel they listen to), and waits until the engine has
 * handed it on (no run running or due and untaken) before the next: what a run does when it wakes (sleep again,
 * fail and wait to retry, start a child) is in the database before the clock moves on.
 */
export class TestClock {
  private constructor(
    private readonly session: Client,
    private readonly settleTimeoutMs: number,
  ) {}

  /** Installs the clock in the database of `url`, which nothing may be connected to yet. */
  static async install(url: string, settleTimeoutMs: number): Promise<TestClock> {
    await withSession(url, (db) => installTestClock(db));
    // A session opened after the install: its now() is the test clock's.
    const session = new Client({ connectionString: url, application_name: 'durable-test-clock' });
    await session.connect();
    return new TestClock(session, settleTimeoutMs);
  }

  /** The test clock now (epoch ms). */
  now(): Promise<number> {
    return databaseNow(sessionExecutor(this.session));
  }

  /** Moves the clock `ms` forward, firing what falls due on the way in order, and returns once all of it is handed on. */
  async skip(ms: number, timers: DueTimesFollower): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) throw new TestEnvironmentError('skip_time_invalid', `skipTime takes a duration in milliseconds (0 or more), got ${ms}`);
    const db = sessionExecutor(this.session);
    await this.settled(db);
    const until = (await databaseNow(db)) + ms;
    for (;;) {
      const next = await nextDueTime(db);
      const step = next === null || next > until ? until : next;
      await advanceTestClockTo(db, step);
      await timers.resync();
      await announceDueRuns(db);
      await this.settled(db);
      if (step === until) return;
    }
  }

  async close(): Promise<void> {
    await this.session.end();
  }

  /** Until no run is running, or due and not taken yet, and no schedule is due; fails naming them after settleTimeoutMs. */
  private async settled(db: SqlExecutor): Promise<void> {
    const deadline = performance.now() + this.settleTimeoutMs;
    for (;;) {
      const unsettled = await unsettledWork(db, NAMED);
      if (unsettled.length === 0) return;
      if (performance.now() > deadline) {
        const named = unsettled.map(({ id, workflow, state }) => `${workflow} ${id} (${state})`).join(', ');
        throw new TestEnvironmentError(
          'skip_time_unsettled',
          `skipTime: still running or due after ${this.settleTimeoutMs} ms: ${named}. The clock moves only when everything due so ` +
            'far has been handed on: is a task waiting on something the test never resolves, or the workflow paused or hosted by no worker?',
        );
      }
      await delay(SETTLE_POLL_MS);
    }
  }
}

async function withSession(url: string, work: (db: SqlExecutor) => Promise<void>): Promise<void> {
  const session = new Client({ connectionString: url });
  await session.connect();
  try {
    await work(sessionExecutor(session));
  } finally {
    await session.end();
  }
}
