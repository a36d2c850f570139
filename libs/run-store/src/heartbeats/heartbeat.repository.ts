import { Database, refreshClaims } from '@app/persistence';
import { Injectable } from '@nestjs/common';

/** Keeps claims alive. */
@Injectable()
export class HeartbeatRepository {
  constructor(private readonly db: Database) {}

  /**
   * Refreshes the claims this worker still holds and returns the ids it no longer holds. Never waits for
   * a row lock, and never revives a claim that was taken over (see refreshClaims in the SQL home).
   */
  async refresh(runs: { id: string; expectedRevision: number }[]): Promise<string[]> {
    if (runs.length === 0) return [];
    return refreshClaims(this.db, runs);
  }
}
