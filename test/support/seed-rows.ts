import { uuidv7 } from '@app/persistence';
import type { TestDatabase } from './database';

/** A row of `runs` for a statement's test: what it does not say takes the column's default (queued, due now). */
export interface SeedRun {
  id?: string;
  workflow?: string;
  version?: string;
  /** `<workflow>:<version>[:<shard>]` unless given. */
  queue?: string;
  shard?: string | null;
  status?: 'queued' | 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';
  priority?: number;
  dueAt?: Date | 'infinity';
  heartbeatAt?: Date | null;
  createdAt?: Date;
  finishedAt?: Date | null;
  parentId?: string | null;
  idempotencyKey?: string | null;
  concurrencyKey?: string | null;
  holdsSlot?: boolean;
  tags?: Record<string, string>;
  error?: object | null;
}

/**
 * Inserts a run as it would be in that state (through the database's own session: with no `wf.dispatch`, the
 * triggers write no outbox rows). Its id is a UUIDv7 of `createdAt` (now), as the coordinator makes them.
 */
export async function insertRun(db: Pick<TestDatabase, 'sql'>, run: SeedRun = {}): Promise<string> {
  const workflow = run.workflow ?? 'echo';
  const version = run.version ?? '1';
  const shard = run.shard ?? null;
  const createdAt = run.createdAt ?? new Date();
  const id = run.id ?? uuidv7(createdAt.getTime());
  const status = run.status ?? 'queued';
  const finished = status === 'completed' || status === 'failed' || status === 'cancelled';
  await db.sql(
    `INSERT INTO runs (id, workflow, version, queue, shard, status, priority, due_at, heartbeat_at, created_at, finished_at, parent_id,
                       idempotency_key, concurrency_key, holds_slot, tags, error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
    [
      id,
      workflow,
      version,
      run.queue ?? [workflow, version, ...(shard ? [shard] : [])].join(':'),
      shard,
      status,
      run.priority ?? 0,
      run.dueAt ?? new Date(),
      run.heartbeatAt ?? (status === 'running' ? new Date() : null),
      createdAt,
      run.finishedAt ?? (finished ? new Date() : null),
      run.parentId ?? null,
      run.idempotencyKey ?? null,
      run.concurrencyKey ?? null,
      run.holdsSlot ?? false,
      JSON.stringify(run.tags ?? {}),
      run.error ? JSON.stringify(run.error) : null,
    ],
  );
  return id;
}
