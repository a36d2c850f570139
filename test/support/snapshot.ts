import type { TestDatabase } from './database';

/**
 * A fingerprint of every row of every table in the database, by table: equal snapshots mean nothing
 * was written in between (a refused request must leave them equal).
 */
export async function snapshotTables(db: TestDatabase): Promise<Record<string, string>> {
  const tables = await db.sql<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`);
  const rows = await db.sql<{ name: string; fingerprint: string }>(
    tables
      .map(({ name }) => `SELECT '${name}' AS name, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS fingerprint FROM "${name}" t`)
      .join(' UNION ALL '),
  );
  return Object.fromEntries(rows.map((row) => [row.name, row.fingerprint]));
}
