import { setTimeout as delay } from 'node:timers/promises';
import { TOKENS } from './cluster';
import type { PlannedRun } from './plan';
import type { Violations } from './violations';

const BATCH_MAX = 500;
const TICK_MS = 100;

/**
 * Starts the planned runs on schedule through `POST /v1/runs/batch`, each with its idempotency key,
 * one request at a time. A request that fails (coordinator down, database down, lost answer) is sent
 * again with what became due meanwhile: the keys make a start that had landed return the same run.
 */
export class RunStarter {
  /** Run id by idempotency key. */
  readonly ids = new Map<string, string>();
  failedRequests = 0;
  private readonly errors = new Map<string, number>();

  constructor(
    private readonly coordinatorUrl: string,
    private readonly plan: PlannedRun[],
    private readonly violations: Violations,
  ) {}

  /** Resolves once every planned run was started, or when `signal` aborts. */
  async run(startedAt: number, signal: AbortSignal): Promise<void> {
    let next = 0;
    while (this.ids.size < this.plan.length && !signal.aborted) {
      while (next < this.plan.length && this.plan[next].atMs <= Date.now() - startedAt) next++;
      const due = this.plan
        .slice(0, next)
        .filter((run) => !this.ids.has(run.key))
        .slice(0, BATCH_MAX);
      if (due.length > 0 && (await this.start(due))) continue;
      await delay(due.length > 0 ? 250 : TICK_MS, undefined, { signal }).catch(() => undefined);
    }
  }

  /** The kinds of failed start requests and how often each happened. */
  errorSummary(): string {
    return [...this.errors].map(([error, count]) => `${count}× ${error}`).join('; ');
  }

  private async start(batch: PlannedRun[]): Promise<boolean> {
    try {
      const response = await fetch(`${this.coordinatorUrl}/v1/runs/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.client}`, 'content-type': 'application/json' },
        body: JSON.stringify({ runs: batch.map((run) => ({ workflow: 'soak', version: '1', input: run.input, idempotencyKey: run.key })) }),
        signal: AbortSignal.timeout(15_000),
      });
      if (!response.ok) throw new Error(`${response.status} ${(await response.text()).slice(0, 200)}`);
      const { runs } = (await response.json()) as { runs: { id: string; idempotencyKey: string }[] };
      for (const [i, planned] of batch.entries()) this.record(planned.key, runs[i]);
      return true;
    } catch (error) {
      this.failedRequests++;
      const kind = errorKind(error as Error);
      this.errors.set(kind, (this.errors.get(kind) ?? 0) + 1);
      return false;
    }
  }

  private record(key: string, run: { id: string; idempotencyKey: string } | undefined): void {
    if (!run || run.idempotencyKey !== key) {
      this.violations.add('idempotent starts', `the batch answer for key ${key} is ${JSON.stringify(run)}`);
      return;
    }
    this.ids.set(key, run.id);
  }
}

function errorKind(error: Error): string {
  const cause = (error.cause as { code?: string } | undefined)?.code;
  return (cause ?? error.message).replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').slice(0, 120);
}
