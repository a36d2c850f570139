import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCoordinatorConfig } from '../apps/coordinator/src/config/coordinator.config';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';
import { EMBEDDED_DATABASE, EMBEDDED_DEFAULT_PORT, embeddedUrl } from '../scripts/local-database.mjs';

/** Every environment variable an app reads, by reading its config through a recording proxy. */
function variablesRead(load: (env: Record<string, string | undefined>) => unknown, base: Record<string, string>): Set<string> {
  const read = new Set<string>();
  const env = new Proxy(base, {
    get(target, name: string) {
      read.add(name);
      return target[name];
    },
  });
  load(env);
  return read;
}

describe('README configuration table', () => {
  const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## HTTP API'));
  const documented = new Set([...table.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1]));

  it.each([
    ['coordinator', () => variablesRead(loadCoordinatorConfig, { DATABASE_URL: 'postgres://x@h/db', AUTH_DISABLED: 'true' })],
    ['worker', () => variablesRead(loadWorkerConfig, {})],
  ])('documents every variable the %s reads', (_app, read) => {
    const missing = [...read()].filter((name) => !documented.has(name));
    expect(missing).toEqual([]);
  });
});

describe("README's quick start", () => {
  const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
  const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## Dashboard'));

  it("says how to connect to npm start's embedded database: the launcher's port, user, password and database", () => {
    expect(quickStart).toContain(`psql ${embeddedUrl(EMBEDDED_DATABASE, EMBEDDED_DEFAULT_PORT)}\n`);
  });
});
