import {
  checkExposedValue,
  checkProgress,
  EXPOSED_NAMES_MAX,
  InvalidRequestError,
  type JsonValue,
  parseIdentifier,
  type RunValuesRequest,
} from '@nest-durable/common';
import { toJson } from './json-values';

/** What one flush sends: the values that changed since the last one, and the progress reported since. */
export type RunValuesUpdate = Omit<RunValuesRequest, 'expectedRevision'>;

export interface RunValuesOptions {
  /** The least time between two sends of progress (the last value wins in between). */
  progressIntervalMs: number;
  /** Whether the run is still replaying recorded steps: nothing is sent then (see RunValues). */
  replaying(): boolean;
  /** Sends an update under the claim; false when the run is no longer this execution's to write (nothing sent). */
  send(update: RunValuesUpdate): boolean;
  /** A query handler threw: its answer is left as it was. */
  handlerFailed(name: string, error: unknown): void;
}

/**
 * A run's exposed values, query handlers and progress, for one execution (`ctx.expose`, `ctx.onQuery`,
 * `ctx.progress`). Nothing here makes a request of its own: `flush` hands what changed to the run's next report
 * (RunContext calls it at each new step and before the outcome, so it travels in that report batch), and progress
 * is flushed by a timer at most once per `progressIntervalMs` while a step runs (a long task streaming output).
 *
 * Replays: while the execution replays recorded steps nothing is sent, so an older value exposed early in the
 * handler never overwrites a newer one recorded by the execution before; at the first new step the latest of each
 * is sent once, and the coordinator leaves a value written again unchanged (no duplicate rows, no new timestamp).
 */
export class RunValues {
  private readonly exposed = new Map<string, JsonValue>();
  private readonly handlers = new Map<string, () => unknown>();
  /** JSON text of each value as last sent (a value sent again unchanged is not sent). */
  private readonly sent = new Map<string, string>();
  private progress: { value: JsonValue } | undefined;
  private lastProgressAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: RunValuesOptions) {}

  expose(name: string, value: unknown): void {
    this.claimName(name);
    const json = toJson(value);
    checkExposedValue(name, json);
    this.exposed.set(name, json);
  }

  onQuery(name: string, handler: () => unknown): void {
    if (typeof handler !== 'function')
      throw new InvalidRequestError('invalid_query_handler', `the handler of query ${JSON.stringify(name)} must be a function`);
    this.claimName(name);
    this.handlers.set(name, handler);
  }

  /** Progress is coalesced: the last value reported within an interval is the one sent. */
  report(value: unknown): void {
    const json = toJson(value);
    checkProgress(json);
    if (this.closed) return;
    this.progress = { value: json };
    this.arm();
  }

  /** Sends the pending progress once its interval has passed (if no timer does already). */
  private arm(): void {
    if (this.timer || this.closed) return;
    const waitMs = Math.max(0, this.lastProgressAt + this.options.progressIntervalMs - performance.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // Its interval has passed (a timer may fire a fraction of a millisecond before performance.now() says so).
      this.flush(true);
      // Not sent (still replaying, or the run is not ours to write now): tried again an interval later.
      if (!this.progress) return;
      this.lastProgressAt = performance.now();
      this.arm();
    }, waitMs);
    this.timer.unref();
  }

  /**
   * Hands what changed since the last flush to `send` (nothing while replaying, nothing when nothing changed).
   * Progress goes with it once its interval has passed, or always with `withProgress` (its timer's flush, and
   * before the run suspends or ends: its last progress is kept); otherwise its timer sends it.
   */
  flush(withProgress = false): void {
    if (this.closed || this.options.replaying()) return;
    const changed: Record<string, JsonValue> = {};
    let count = 0;
    for (const [name, value] of [...this.exposed, ...this.answers()]) {
      const text = JSON.stringify(value);
      if (this.sent.get(name) === text) continue;
      changed[name] = value;
      count++;
    }
    const due = withProgress || performance.now() >= this.lastProgressAt + this.options.progressIntervalMs;
    const progress = due ? this.progress : undefined;
    if (count === 0 && !progress) return;
    const update: RunValuesUpdate = { ...(count > 0 ? { exposed: changed } : {}), ...(progress ? { progress: progress.value } : {}) };
    if (!this.options.send(update)) return;
    for (const [name, value] of Object.entries(changed)) this.sent.set(name, JSON.stringify(value));
    this.exposed.clear();
    if (progress) {
      this.progress = undefined;
      this.lastProgressAt = performance.now();
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** The execution ended (its outcome reported, suspended or lost): no timer is left behind. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The query handlers' answers now (a handler that throws or answers something unstorable keeps its last answer). */
  private answers(): [string, JsonValue][] {
    const answers: [string, JsonValue][] = [];
    for (const [name, handler] of this.handlers) {
      try {
        const answer = toJson(handler());
        checkExposedValue(name, answer);
        answers.push([name, answer]);
      } catch (error) {
        this.options.handlerFailed(name, error);
      }
    }
    return answers;
  }

  private claimName(name: string): void {
    parseIdentifier(name, 'value_name');
    if (this.exposed.has(name) || this.handlers.has(name) || this.sent.has(name)) return;
    if (new Set([...this.exposed.keys(), ...this.handlers.keys(), ...this.sent.keys()]).size >= EXPOSED_NAMES_MAX) {
      throw new InvalidRequestError('too_many_values', `a run exposes at most ${EXPOSED_NAMES_MAX} names; ${JSON.stringify(name)} would be one more`);
    }
  }
}
