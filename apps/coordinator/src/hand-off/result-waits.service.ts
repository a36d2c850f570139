import type { FinishedRun } from '@app/locking';
import { Injectable } from '@nestjs/common';

/** One wait for a run's result on this coordinator, from the moment it is armed until it is released. */
export interface ResultWait {
  /** The run as a finish on this coordinator ended it after the wait was armed, if one did. */
  readonly finished: FinishedRun | undefined;
  /**
   * Resolves once no request here that may be ending the run is under way (at once if none is; see
   * ResultWaits.finishing): woken by the NOTIFY of the run's end, which can come before the finish's own
   * answer, the wait lets that finish hand the run over instead of reading it.
   */
  settled(): Promise<void>;
  release(): void;
}

/** Reports under way on this coordinator that may end awaited runs (see ResultWaits.finishing). */
export interface Finishing {
  end(): void;
}

class Wait implements ResultWait {
  finished: FinishedRun | undefined;

  constructor(
    private readonly finishes: () => Iterable<Promise<void>>,
    private readonly remove: (wait: Wait) => void,
  ) {}

  async settled(): Promise<void> {
    await Promise.all(this.finishes());
  }

  release(): void {
    this.remove(this);
  }
}

const NOTHING_FINISHING: Finishing = { end: () => undefined };

/**
 * This coordinator's waits for run results (`GET /v1/runs/:id/result`), by run, so that a finish here of
 * a run someone waits for returns the ended run from its statement and hands it to them: the result needs
 * no read of the run after the commit. A finish elsewhere hands nothing: its NOTIFY wakes the wait, which reads.
 */
@Injectable()
export class ResultWaits {
  private readonly byRun = new Map<string, Set<Wait>>();
  /** Of each awaited run a request here may be ending, the ends of those requests. */
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

  /** Whether a wait for this run's result is armed here: its finish should return the run (see hand). */
  isAwaited(runId: string): boolean {
    return this.byRun.has(runId);
  }

  /**
   * Marks the awaited ones of these runs as being ended by a request here (a worker's outcome reports), until
   * `end()`, which the request calls once it handed over what it finished (in a `finally`: a request that
   * fails ends it too, and its waits read).
   */
  finishing(runIds: Iterable<string>): Finishing {
    const awaited = [...runIds].filter((runId) => this.byRun.has(runId));
    if (awaited.length === 0) return NOTHING_FINISHING;
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    for (const runId of awaited) {
      const ends = this.finishes.get(runId) ?? new Set();
      ends.add(ended);
      this.finishes.set(runId, ends);
    }
    return {
      end: () => {
        for (const runId of awaited) {
          const ends = this.finishes.get(runId);
          ends?.delete(ended);
          if (ends?.size === 0) this.finishes.delete(runId);
        }
        end();
      },
    };
  }

  /** Hands the run a finish ended (and committed) to the waits armed for it now; later ones read it as usual. */
  hand(finished: FinishedRun): void {
    for (const wait of this.byRun.get(finished.run.id) ?? []) wait.finished = finished;
  }

  private remove(runId: string, wait: Wait): void {
    const waits = this.byRun.get(runId);
    waits?.delete(wait);
    if (waits?.size === 0) this.byRun.delete(runId);
  }
}
