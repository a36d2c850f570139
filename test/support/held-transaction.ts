import type { Database, SqlExecutor } from '@app/persistence';

export interface HeldTransaction<T> {
  /** What `work` returned, once it has run: the transaction is still open (its locks held). */
  readonly started: Promise<T>;
  /** Runs `then` in the transaction (if given), commits it, and gives what `then` returned. */
  commit<U = void>(then?: (tx: SqlExecutor, started: T) => Promise<U>): Promise<U | undefined>;
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
  let finish!: (then: ((tx: SqlExecutor, started: T) => Promise<unknown>) | undefined) => void;
  const finishing = new Promise<((tx: SqlExecutor, started: T) => Promise<unknown>) | undefined>((resolve) => (finish = resolve));
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
      finish(then as ((tx: SqlExecutor, started: T) => Promise<unknown>) | undefined);
      return (await committed) as U | undefined;
    },
  };
}
