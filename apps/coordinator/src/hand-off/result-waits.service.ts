import type { FinishedRun } from '@app/run-store';
import { Injectable } from '@nestjs/common';

/** One wait for a run's result on this coordinator, from the moment it is armed until it is released. */
export interface ResultWait {
  /** The run as a finish here ended it, handed over because the wait was armed in time (see Finishing.ended). */
  readonly finished: FinishedRun | undefined;
  /** True once a finish here ended the run (committed): its steps are final, it can be read with them. */
  readonly ended: boolean;
  /**
   * Resolves once no request here that may be ending the run is under way (at once if none is), or after
   * `timeoutMs`: a wait lets such a request hand it the run, or say it ended, instead of reading the run
   * before its end commits (and again after).
   */
  settled(timeoutMs: number): Promise<void>;
  release(): void;
}

/** A request under way on this coordinator that may end runs (a worker's outcome reports). */
export interface Finishing {
  /**
   * Call as the run's finish statement is made: whether it should return the run (its row, input and output
   * included), because a wait for it is armed now, or because it `completes` the only run this request ends: a
   * client awaiting one run asks for its result about when its worker reports the end (in W2 two times in five
   * after the statement left), and a completed run's row goes to waits armed that late too.
   */
  returnsRun(runId: string, completes: boolean): boolean;
  /**
   * The run's finish committed: the waits armed when `returnsRun` was called get `run` (if it was returned),
   * and if it completed so do those armed since, up to this call (see `finishing`); every wait armed now learns
   * the run ended. One armed after this call reads the run. Returns how many waits learnt of the end here.
   */
  ended(runId: string, run: FinishedRun | undefined): number;
  /** The request is over, whatever it did (call it in a `finally`): the waits it held up go on. */
  end(): void;
}

class Wait implements ResultWait {
  finished: FinishedRun | undefined;
  ended = false;

  constructor(
    private readonly finishes: () => Iterable<Promise<void>>,
    private readonly remove: (wait: Wait) => void,
  ) {}

  async settled(timeoutMs: number): Promise<void> {
    const finishes = [...this.finishes()];
    if (finishes.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, timeoutMs))));
    await Promise.race([Promise.all(finishes), timeout]);
    clearTimeout(timer);
  }

  release(): void {
    this.remove(this);
  }
}

const ENDS_NOTHING: Finishing = { returnsRun: () => false, ended: () => 0, end: () => undefined };

/**
 * This coordinator's waits for run results (`GET /v1/runs/:id/result`), by run, and the requests here that
 * may be ending runs, so that a finish here of a run someone waits for (or of a request's only run) returns
 * the ended run from its statement and hands it to them: the result needs no read of the run after the
 * commit. A wait armed while such a request is under way waits for it instead of reading a run about to end.
 * A finish elsewhere hands nothing: its NOTIFY wakes the wait, which reads.
 */
@Injectable()
export class ResultWaits {
  private readonly byRun = new Map<string, Set<Wait>>();
  /** Of each run a request here may be ending, the ends of those requests. */
  private readonly finishes = new Map<string, Set<Promise<void>>>();

  /** Arms a wait for the run's result (before the wait's first read of the run): release it when it ends. */
  arm(runId: string): ResultWait {
    const wait = new Wait(
      () => this.finishes.get(runId) ?? [],
      (done) => this.remove(runId, done),
    );
    const waits = this.byRun.get(runId) ?? new Set();
    waits.add(wait);
    this.byRun.set(runId, waits);
    return wait;
  }

  /** Marks these runs as being ended by a request here until its `end()`; see Finishing. */
  finishing(runIds: Iterable<string>): Finishing {
    const runs = new Set(runIds);
    if (runs.size === 0) return ENDS_NOTHING;
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    for (const runId of runs) {
      const ends = this.finishes.get(runId) ?? new Set();
      ends.add(ended);
      this.finishes.set(runId, ends);
    }
    // Of each run, the waits armed when its finish statement was made: they get the run it returns. One armed
    // later may have been armed after the end committed, and a failed run can be retried meanwhile: such a wait
    // gets a failed run's row only by reading it. Nothing changes a completed run, so its row is what a read
    // after the end would return. (Retention deletes it, by a sweep after its window: with a window shorter than
    // the moment between the commit and this request's `ended`, such a wait could answer with a run just deleted.)
    const armedBefore = new Map<string, Wait[]>();
    return {
      returnsRun: (runId, completes) => {
        const waits = this.byRun.get(runId);
        if (waits) armedBefore.set(runId, [...waits]);
        return waits !== undefined || (completes && runs.size === 1);
      },
      ended: (runId, run) => {
        const later = run?.run.status === 'completed' ? this.byRun.get(runId) : undefined;
        if (run) for (const wait of [...(armedBefore.get(runId) ?? []), ...(later ?? [])]) wait.finished = run;
        const waits = this.byRun.get(runId) ?? new Set<Wait>();
        for (const wait of waits) wait.ended = true;
        return waits.size;
      },
      end: () => {
        for (const runId of runs) {
          const ends = this.finishes.get(runId);
          ends?.delete(ended);
          if (ends?.size === 0) this.finishes.delete(runId);
        }
        end();
      },
    };
  }

  private remove(runId: string, wait: Wait): void {
    const waits = this.byRun.get(runId);
    waits?.delete(wait);
    if (waits?.size === 0) this.byRun.delete(runId);
  }
}
