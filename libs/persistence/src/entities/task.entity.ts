import type { ErrorDetails, TaskStatus } from '@app/contracts';
import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn, type Relation } from 'typeorm';
import { RunEntity } from './run.entity';

/** A checkpointed task result: written once per (run, key), replayed on re-execution. */
@Entity({ name: 'tasks' })
export class TaskEntity {
  @PrimaryColumn('uuid', { name: 'run_id' })
  runId: string;

  @PrimaryColumn('text')
  key: string;

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

  @Column('timestamptz', { name: 'created_at' })
  createdAt: Date;

  @ManyToOne(() => RunEntity, (run) => run.tasks, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'run_id' })
  run?: Relation<RunEntity>;
}
