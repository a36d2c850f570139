import type { RunStatus } from '@nest-durable/client';
import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Append-only history: one row per state transition of a run (updates are refused by a trigger). */
@Entity({ name: 'run_transitions' })
export class RunTransitionEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column('uuid', { name: 'run_id' })
  runId: string;

  @Column('text', { name: 'from_status', nullable: true })
  fromStatus: RunStatus | null;

  @Column('text', { name: 'to_status' })
  toStatus: RunStatus;

  @Column('integer')
  revision: number;

  @Column('text', { name: 'worker_id', nullable: true })
  workerId: string | null;

  @Column('timestamptz', { name: 'created_at' })
  createdAt: Date;
}
