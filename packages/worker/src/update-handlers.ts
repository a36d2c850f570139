import { decode, type ErrorDetails, type JsonValue, type PendingUpdate, type RecordUpdatesRequest, type StoredTask, UpdateOutput } from '@nest-durable/common';
import { InvalidStepError, toErrorDetails } from '@nest-durable/workflow';
import { toJson } from './json-values';

/** An update's answer as the worker records it (RecordUpdatesRequest). */
export type AppliedUpdate = RecordUpdatesRequest['updates'][number];

/** The answer of an update applied while its run had no handler registered for it. */
const NOT_HANDLED = (name: string): ErrorDetails => ({
  name: 'UpdateNotHandled',
  message: `the run had no handler for update "${name}" when it applied it (register it with ctx.handleUpdate before the run's first wait)`,
});

/**
 * The update handlers of one execution of a run (`ctx.handleUpdate`), and how updates are applied at a wait: the
 * ones recorded there again (a replay: each handler runs with its recorded input, its recorded answer stands), then
 * the pending ones the coordinator hands over, in arrival order, each answered by its handler. Shared by a run's
 * execution (RunContext) and a replay of its history (ReplayContext), so both rebuild the same state.
 */
export class UpdateHandlers {
  private readonly handlers = new Map<string, (input: JsonValue) => unknown>();
  private applying = false;

  constructor(private readonly declared: ReadonlySet<string>) {}

  register(name: string, handler: (input: JsonValue) => unknown): void {
    if (!this.declared.has(name)) {
      const known = this.declared.size === 0 ? 'it declares none' : `it declares ${[...this.declared].join(', ')}`;
      throw new InvalidStepError(`update "${name}" is not among the workflow's declared updates (${known})`);
    }
    if (typeof handler !== 'function') throw new InvalidStepError(`the handler of update "${name}" must be a function`);
    this.handlers.set(name, handler);
  }

  /** A step taken inside an update handler is refused: an update happens while its run waits, and takes no position. */
  checkNoStep(): void {
    if (this.applying) throw new InvalidStepError('an update handler takes no step (ctx.task, ctx.sleep, …): it runs while its run waits');
  }

  /** Runs the updates recorded at a wait again, so the run's state is what it was after them. */
  async replay(recorded: readonly StoredTask[]): Promise<void> {
    for (const step of recorded) {
      const handler = this.handlers.get(updateNameOf(step.key));
      if (!handler) continue; // Recorded as not handled: nothing ran then either.
      await this.run(handler, (step.output as { input: JsonValue }).input).catch(() => undefined);
    }
  }

  /** Applies pending updates in arrival order: each its handler's answer, under the step key `keyOf` gives it. */
  async apply(pending: readonly PendingUpdate[], keyOf: (name: string) => string): Promise<AppliedUpdate[]> {
    const applied: AppliedUpdate[] = [];
    for (const update of pending) {
      const key = keyOf(update.name);
      const handler = this.handlers.get(update.name);
      if (!handler) {
        applied.push({ id: update.id, key, status: 'failed', error: NOT_HANDLED(update.name) });
        continue;
      }
      try {
        const output = toJson(await this.run(handler, update.input));
        // One the coordinator would refuse (too large, a NUL) fails the update, rather than the record and the run with it.
        decode(UpdateOutput, output, `the answer of update ${update.name}`);
        applied.push({ id: update.id, key, status: 'completed', output });
      } catch (error) {
        applied.push({ id: update.id, key, status: 'failed', error: toErrorDetails(error) });
      }
    }
    return applied;
  }

  private async run(handler: (input: JsonValue) => unknown, input: JsonValue): Promise<unknown> {
    this.applying = true;
    try {
      return await handler(input);
    } finally {
      this.applying = false;
    }
  }
}

/** The names of the updates a workflow declares. */
export function declaredUpdates(declaration: { updates?: object }): ReadonlySet<string> {
  return new Set(Object.keys(declaration.updates ?? {}));
}

/** `update:<name>#<n>` → name (update names are identifiers: no ':' or '#'). */
function updateNameOf(key: string): string {
  return key.slice('update:'.length, key.lastIndexOf('#'));
}
