import type { AttemptTime, ErrorDetails, StepKind, TaskStatus } from '@nest-durable/common';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An attempt dated on the database's clock (a retry wait's; `startedAt` as PostgreSQL writes a timestamptz in JSON). */
export interface DatedAttempt {
  attempt: number;
  startedAt: string;
  durationMs: number;
}

/**
 * A step of a run: a checkpointed task result (written once per key, replayed on re-execution) or a
 * point where the run suspended (sleep, event, child, retry wait), `waiting` until it resolves.
 */
@Entity({ name: 'tasks' })
export class TaskEntity {
  @PrimaryColumn('uuid', { name: 'run_id' })
  runId: string;

  @PrimaryColumn('text')
  key: string;

  @Column('text')
  kind: StepKind;

  @Column('integer')
  seq: number;

  @Column('text')
  name: string;

  @Column('text')
  status: TaskStatus;

  @Column('integer')
  attempts: number;

  @Column('jsonb', { nullable: true })
  /** JSON. */
  output: unknown;

  @Column('jsonb', { nullable: true })
  error: ErrorDetails | null;

  @Column('timestamptz', { name: 'wake_at', nullable: true })
  wakeAt: Date | null;

  @Column('uuid', { name: 'child_id', nullable: true })
  childId: string | null;

  @Column('timestamptz', { name: 'created_at' })
  createdAt: Date;

  /** When a task began (from the duration its worker reported; null if it reported none, and for suspension steps). */
  @Column('timestamptz', { name: 'started_at', nullable: true })
  startedAt: Date | null;

  /**
   * A task's attempts in the execution that recorded it (offsets from startedAt, on the worker's clock: AttemptTime),
   * or a retry wait's, of the executions that ended in it (dated: DatedAttempt); null when none were sent.
   */
  @Column('jsonb', { name: 'attempt_times', nullable: true })
  attemptTimes: AttemptTime[] | DatedAttempt[] | null;

  /** When a suspension step resolved (null while waiting, and for task results: they are recorded when they end). */
  @Column('timestamptz', { name: 'finished_at', nullable: true })
  finishedAt: Date | null;
}
