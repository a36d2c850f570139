import { MIGRATIONS } from '@app/persistence';
import type { QueryRunner } from 'typeorm';

/** A migration's name and the statements its `up` sends, in order. */
export interface RecordedMigration {
  name: string;
  statements: string[];
}

/**
 * What libs/persistence's migrations send when they run, recorded rather than run (a query runner that only
 * keeps the statements: a migration that asks it anything else fails here, visibly).
 */
export async function recordMigrations(): Promise<RecordedMigration[]> {
  const recorded: RecordedMigration[] = [];
  for (const Migration of MIGRATIONS) {
    const migration = new Migration();
    const statements: string[] = [];
    await migration.up({ query: async (text: string) => void statements.push(text) } as unknown as QueryRunner);
    recorded.push({ name: migration.name ?? Migration.name, statements });
  }
  return recorded;
}
