import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/database';
import { migrate } from '../../../../test/support/migrated-database';
import { type RecordedMigration, recordMigrations } from '../../../../test/support/recorded-migrations';

/** With UPDATE_SCHEMA=1 these tests rewrite the files from the migrated database instead of comparing. */
const UPDATE = process.env.UPDATE_SCHEMA === '1';
const SCHEMA_FILE = join(__dirname, '../../schema.sql');
const FUNCTIONS = join(__dirname, 'functions');
const UPDATE_COMMAND = 'UPDATE_SCHEMA=1 npx jest libs/persistence/src/schema';

const SCHEMA_HEADER = `-- The schema as libs/persistence's migrations leave it: tables, indexes, constraints, triggers and functions
-- (and TypeORM's own \`migrations\` table). Made by \`pg_dump --schema-only --no-owner --no-privileges\` of a
-- freshly migrated database, without its SET lines, session settings and banner comments. For reading: a
-- database gets its schema from the migrations, never from this file. libs/persistence/src/schema/schema.spec.ts
-- migrates a fresh database and compares (comments and blank lines aside); after a migration, rewrite it with
-- \`${UPDATE_COMMAND}\`.
`;

/** pg_dump's lines that are no part of the schema: session settings, its \restrict key, its banner. */
const DUMP_NOISE = [/^SET /, /^SELECT pg_catalog\.set_config\(/, /^\\(un)?restrict /, /^-- (PostgreSQL database dump|Dumped (from|by) )/];

/** What is compared: every line but comments and blank ones, without trailing spaces. */
function schemaLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line !== '' && !line.startsWith('--') && !DUMP_NOISE.some((noise) => noise.test(line)));
}

/** The dump as the file holds it: the noise gone, and what is left of the banner (blocks of bare `--`). */
function schemaFile(dump: string): string {
  const kept = dump.split('\n').filter((line) => !DUMP_NOISE.some((noise) => noise.test(line)));
  const blocks = kept
    .join('\n')
    .split(/\n{2,}/)
    .filter((block) => !/^(--\n?)*$/.test(block.trim()));
  return `${SCHEMA_HEADER}\n${blocks.join('\n\n').trim()}\n`;
}

/** A function's file: what it is and where it comes from, then its definition as the database holds it. */
function functionFile(name: string, definedBy: string, definition: string): string {
  return `-- ${name}: its current definition, as pg_get_functiondef gives it in a freshly migrated database.
-- Last defined by the migration ${definedBy} (libs/persistence/src/migrations), whose comments say why.
-- Change it with a new migration, then \`${UPDATE_COMMAND}\`
-- (libs/persistence/src/schema/schema.spec.ts checks this file).
${definition.trim()}
`;
}

/** Whitespace does not count (a file may be laid out for reading; the database keeps the migrations' indentation). */
function collapsed(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
}

/** The migration whose `up` (re)defines the function last. */
function lastDefinedBy(migrations: RecordedMigration[], name: string): string {
  const defines = new RegExp(`CREATE (OR REPLACE )?FUNCTION ${name}\\(`);
  return migrations.findLast(({ statements }) => statements.some((text) => defines.test(text)))?.name ?? '(none)';
}

describe('the schema as migrated', () => {
  let db: TestDatabase;

  // A fresh database migrated here (not a copy of a template made earlier): what this test compares is what
  // the migrations do now.
  beforeAll(async () => {
    db = await createTestDatabase('schema');
    await migrate(db.url);
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('is what libs/persistence/schema.sql says', async () => {
    const { stdout: dump } = await promisify(execFile)(
      process.env.PG_DUMP ?? 'pg_dump',
      ['--schema-only', '--no-owner', '--no-privileges', '--dbname', db.url],
      {
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    if (UPDATE) writeFileSync(SCHEMA_FILE, schemaFile(dump));
    expect(schemaLines(readFileSync(SCHEMA_FILE, 'utf8')).join('\n')).toBe(schemaLines(dump).join('\n'));
  });

  it('has every function as its file in libs/persistence/src/schema/functions says, and no other', async () => {
    const functions = await db.sql<{ name: string; definition: string }>(
      `SELECT p.proname AS name, pg_get_functiondef(p.oid) AS definition
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' ORDER BY p.proname`,
    );
    // One file per name: an overload would need a name of its own here.
    expect(new Set(functions.map((f) => f.name)).size).toBe(functions.length);
    const migrations = await recordMigrations();
    const files = new Map(readdirSync(FUNCTIONS).map((file) => [file.replace(/\.sql$/, ''), join(FUNCTIONS, file)]));
    for (const { name, definition } of functions) {
      const expected = functionFile(name, lastDefinedBy(migrations, name), definition);
      const path = join(FUNCTIONS, `${name}.sql`);
      if (UPDATE) writeFileSync(path, expected);
      expect(`${path}\n${collapsed(readFileSync(path, 'utf8'))}`).toBe(`${path}\n${collapsed(expected)}`);
      files.delete(name);
    }
    if (UPDATE) for (const path of files.values()) unlinkSync(path);
    // A file of a function the migrations dropped (or never made).
    expect([...files.keys()]).toEqual([]);
  });
});
