import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCoordinatorConfig } from '../apps/coordinator/src/config/coordinator.config';
import { loadWorkerConfig } from '../apps/worker/src/config/worker.config';

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
