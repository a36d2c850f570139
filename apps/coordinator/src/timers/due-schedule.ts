import type { DueRun } from '@app/persistence';

/**
 * The upcoming due times a coordinator holds, soonest first: one entry per run, at most `capacity`
 * of them, so memory stays bounded however many runs are scheduled. At capacity the latest entries
 * are dropped, and `completeBefore` falls to the earliest due time dropped: before it, every due time
 * the schedule was told of is held; from it on, some may be missing until the owner reloads.
 */
export class DueSchedule {
  private readonly runs: DueRun[] = [];
  private readonly byId = new Map<string, DueRun>();
  private heldBefore = Infinity;
  /** While a reload runs: the earliest due time dropped meanwhile (its load may not have seen it). */
  private droppedDuringReload: number | undefined;

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.runs.length;
  }

  get next(): DueRun | undefined {
    return this.runs[0];
  }

  get completeBefore(): number {
    return this.heldBefore;
  }

  /** Adds a run's due time, or moves it if the run was held with another one. */
  add(run: DueRun): void {
    const held = this.byId.get(run.runId);
    if (held) {
      if (held.at === run.at) return;
      this.remove(held);
    }
    if (this.runs.length >= this.capacity) {
      const latest = this.runs[this.runs.length - 1];
      if (run.at >= latest.at) {
        this.dropped(run.at);
        return;
      }
      this.remove(latest);
      this.dropped(latest.at);
    }
    this.runs.splice(this.firstAfter(run.at), 0, run);
    this.byId.set(run.runId, run);
  }

  /** Removes and returns the runs due at or before `until`, soonest first. */
  takeDue(until: number): DueRun[] {
    const due = this.runs.splice(0, this.firstAfter(until));
    for (const run of due) this.byId.delete(run.runId);
    return due;
  }

  /** Call before loading from the database: what gets dropped from now on counts against the load. */
  beginReload(): void {
    this.droppedDuringReload = Infinity;
  }

  /**
   * Merges a load (nothing when it failed). `cutAt` is the due time of its last row when the load
   * stopped at its limit: later due times were not read. Entries already held stay (a spurious one
   * costs one needless wake-up); the load decides, with what was dropped while it ran, what is now
   * complete.
   */
  endReload(loaded: DueRun[] | undefined, cutAt = Infinity): void {
    const droppedMeanwhile = this.droppedDuringReload ?? Infinity;
    this.droppedDuringReload = undefined;
    if (!loaded) return;
    this.heldBefore = Math.min(cutAt, droppedMeanwhile);
    for (const run of loaded) this.add(run);
  }

  private dropped(at: number): void {
    this.heldBefore = Math.min(this.heldBefore, at);
    if (this.droppedDuringReload !== undefined) this.droppedDuringReload = Math.min(this.droppedDuringReload, at);
  }

  private remove(run: DueRun): void {
    for (let i = this.firstAfter(run.at, true); i < this.runs.length && this.runs[i].at === run.at; i++) {
      if (this.runs[i] === run) {
        this.runs.splice(i, 1);
        break;
      }
    }
    this.byId.delete(run.runId);
  }

  /** The first index whose entry is due after `at` (with `orAt`: at or after it). */
  private firstAfter(at: number, orAt = false): number {
    let low = 0;
    let high = this.runs.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const before = orAt ? this.runs[mid].at < at : this.runs[mid].at <= at;
      if (before) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}
