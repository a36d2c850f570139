import type { ErrorDetails, RunStatus } from '@nest-durable/common';
import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'runs' })
export class RunEntity {
  @PrimaryColumn('uuid')
  id: string;

  @Column('text')
  workflow: string;

  @Column('text')
  version: string;

  /** Where the run waits while ready: see queueName() in packages/common/src/queue-naming.ts. */
  @Column('text')
  queue: string;

  /** Routing shard the run was started with (a child inherits its parent's unless it names one); null: none. */
  @Column('text', { nullable: true })
  shard: string | null;

  @Column('text')
  status: RunStatus;

  @Column('integer')
  revision: number;

  @Column('integer')
  attempt: number;

  @Column('integer')
  priority: number;

  /** Takeovers after its claim went idle (its worker died or hung); past the stall limit the run fails. */
  @Column('integer')
  stalls: number;

  @Column('jsonb', { nullable: true })
  /** JSON. Typed loosely: a recursive JSON type defeats TypeORM's query typings. */
  input: unknown;

  @Column('jsonb', { nullable: true })
  /** JSON. */
  output: unknown;

  @Column('jsonb', { nullable: true })
  error: ErrorDetails | null;

  @Column('text', { name: 'idempotency_key', nullable: true })
  idempotencyKey: string | null;

  /** The run that started this one as a child, if any. */
  @Column('uuid', { name: 'parent_id', nullable: true })
  parentId: string | null;

  /** Metadata it was started with, to find it by (a small map of text). */
  @Column('jsonb')
  tags: Record<string, string>;

  /** When a queued or waiting run may be claimed ('infinity' while waiting for an event or a child). */
  @Column('timestamptz', { name: 'due_at' })
  dueAt: Date | number;

  /** Runs with the same key share their version's `concurrencyPerKey` slots (null: none). */
  @Column('text', { name: 'concurrency_key', nullable: true })
  concurrencyKey: string | null;

  @Column('text', { name: 'claimed_by', nullable: true })
  claimedBy: string | null;

  /** The build id of the worker that took it last (null until one did, or when that worker did not say). */
  @Column('text', { name: 'build_id', nullable: true })
  buildId: string | null;

  /** The W3C trace context of the span that started it (a client's start, its parent's child step); null: not traced. */
  @Column('text', { nullable: true })
  traceparent: string | null;

  @Column('text', { nullable: true })
  tracestate: string | null;

  @Column('timestamptz', { name: 'heartbeat_at', nullable: true })
  heartbeatAt: Date | null;

  @Column('timestamptz', { name: 'created_at' })
  createdAt: Date;

  @Column('timestamptz', { name: 'updated_at' })
  updatedAt: Date;

  @Column('timestamptz', { name: 'started_at', nullable: true })
  startedAt: Date | null;

  @Column('timestamptz', { name: 'finished_at', nullable: true })
  finishedAt: Date | null;

  /** JSON: the last value `ctx.progress` reported (see `progressAt`). */
  @Column('jsonb', { nullable: true })
  progress: unknown;

  /** When the last progress was recorded; null until one was (the statements that return a run for a start leave both out). */
  @Column('timestamptz', { name: 'progress_at', nullable: true })
  progressAt?: Date | null;
}
