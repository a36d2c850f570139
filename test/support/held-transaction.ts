import type { Database, SqlExecutor } from '@app/persistence';

export interface HeldTransaction<T> {
  /** What `work` returned, once it has run: the transaction is still open (its locks held). */
  readonly started: Promise<T>;
  /** Runs `then` in the transaction (if given), commits it, and gives what `then` returned. */
  commit<U = void>(then?: (tx: SqlExecutor, started: T) => Promise<U>): Promise<U | undefined>;
  /** Commits if nothing did yet, and never fails: for a `finally`, so a failing test leaves no transaction open. */
  release(): Promise<void>;
}

/**
 * A transaction that runs `work` and then stays open until told to commit: for tests of what a concurrent
 * statement does while this one holds its locks (no sleeps: the test proceeds once `started` resolves).
 */
export function holdTransaction<T>(database: Database, work: (tx: SqlExecutor) => Promise<T>): HeldTransaction<T> {
  let begun!: (value: T) => void;
  let failed!: (error: unknown) => void;
  const started = new Promise<T>((resolve, reject) => {
    begun = resolve;
    failed = reject;
  });
  type Then = ((tx: SqlExecutor, started: T) => Promise<unknown>) | undefined;
  let finish!: (then: Then) => void;
  const finishing = new Promise<Then>((resolve) => (finish = resolve));
  const committed = database
    .transaction(async (tx) => {
      const result = await work(tx);
      begun(result);
      const then = await finishing;
      return then ? then(tx, result) : undefined;
    })
    .catch((error: unknown) => {
      failed(error);
      throw error;
    });
  // Its failure is the test's through `started` or commit(); a test that never commits is not left with an unhandled rejection.
  committed.catch(() => undefined);
  return {
    started,
    async commit<U>(then?: (tx: SqlExecutor, started: T) => Promise<U>) {
      finish(then as Then);
      return (await committed) as U | undefined;
    },
    async release() {
      finish(undefined); // no effect once commit() was called: a promise resolves once
      await committed.catch(() => undefined);
    },
  };
}

/**
 * Runs `work` in a transaction that waits at most `ms` for any lock (then fails with "lock timeout"): a statement
 * that should not wait fails fast if it does, and one that should wait shows it did.
 */
export function withLockTimeout<T>(database: Database, ms: number, work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  return database.transaction(async (tx) => {
    await tx.query(`SET LOCAL lock_timeout = ${Math.round(ms)}`);
    return work(tx);
  });
}
