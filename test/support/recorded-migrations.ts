import { MIGRATIONS } from '@app/persistence';
import type { QueryRunner } from 'typeorm';

/** A migration's name and the statements its `up` sends, in order. */
export interface RecordedMigration {
  name: string;
  statements: string[];
}

/**
 * What libs/persistence's migrations send when they run, recorded rather than run (a query runner that only
 * keeps the statements, and answers each with no rows: a migration that reads the catalog to see what is left to
 * do, as 1767200000000-transitions-keyed-by-run does, records everything it would do on a database that has none
 * of it).
 */
export async function recordMigrations(): Promise<RecordedMigration[]> {
  const recorded: RecordedMigration[] = [];
  for (const Migration of MIGRATIONS) {
    const migration = new Migration();
    const statements: string[] = [];
    await migration.up({
      query: async (text: string) => {
        statements.push(text);
        return [];
      },
    } as unknown as QueryRunner);
    recorded.push({ name: migration.name ?? Migration.name, statements });
  }
  return recorded;
}
