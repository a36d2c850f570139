import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = join(__dirname, '..');

/**
 * What each part of the house may import (besides itself and third-party packages): the layers of
 * docs/architecture.md, checked here on the code's own imports. Apps sit on server libs, server libs on shared
 * libs, shared libs on @nest-durable/common; the published packages never reach into server code, and server code
 * uses no published package but common.
 */
const MAY_IMPORT: Record<string, string[]> = {
  // The published packages.
  'packages/common': [],
  'packages/client': ['packages/common'],
  'packages/workflow': ['packages/common'],
  'packages/worker': ['packages/common', 'packages/client', 'packages/workflow', 'libs/streams', 'libs/locking', 'libs/metrics'],
  // The test kit, the one published package that reaches server code: it runs the coordinator in a test's process
  // (createTestEnvironment) and moves its database's clock (skipTime), so it ships the coordinator and its libs.
  'packages/testing': ['packages/common', 'packages/client', 'packages/workflow', 'packages/worker', 'apps/coordinator', 'libs/persistence'],
  // Shared libs: both sides use them; the worker package ships them.
  'libs/streams': ['packages/common'],
  'libs/locking': ['packages/common'],
  // The apps' support: configuration, and metrics (which the worker package ships too, for its /metrics).
  'libs/config': ['packages/common'],
  'libs/metrics': [],
  // Server libs: the coordinator's.
  'libs/persistence': ['packages/common', 'libs/locking'],
  'libs/outbox': ['packages/common', 'libs/persistence', 'libs/streams'],
  'libs/run-store': ['packages/common', 'libs/persistence', 'libs/outbox', 'libs/locking'],
  // The apps.
  'apps/coordinator': ['packages/common', 'libs/persistence', 'libs/run-store', 'libs/outbox', 'libs/streams', 'libs/locking', 'libs/config', 'libs/metrics'],
  'apps/worker': ['packages/common', 'packages/client', 'packages/workflow', 'packages/worker', 'libs/streams', 'libs/locking', 'libs/config', 'libs/metrics'],
  'apps/dashboard': ['packages/common'],
};

const ALIASES: Record<string, string> = Object.fromEntries(
  Object.entries(JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')).compilerOptions.paths as Record<string, string[]>).map(([alias, [target]]) => [
    alias,
    unitOf(resolve(ROOT, target)) ?? target,
  ]),
);

/** The part of the house a path is in (`libs/streams`, `apps/worker`, …), if any. */
function unitOf(path: string): string | undefined {
  const match = /^((?:apps|libs|packages)\/[^/]+)(\/|$)/.exec(relative(ROOT, path));
  return match?.[1];
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (entry === 'node_modules' || entry === 'dist') return [];
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return /\.(ts|tsx|mts)$/.test(entry) && !entry.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every module a file imports, re-exports or requires by a literal name. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found = [
    ...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+['"]([^'"]+)['"]/g),
    ...text.matchAll(/\b(?:require|import)\(\s*['"]([^'"]+)['"]\s*\)/g),
  ];
  return found.map((match) => match[1]);
}

/** Where an import leads: a part of the house, `test` (a spec's support), or undefined for a third-party package. */
function targetOf(file: string, specifier: string): string | undefined {
  if (specifier.startsWith('.')) {
    const path = resolve(dirname(file), specifier);
    return relative(ROOT, path).startsWith('test/') ? 'test' : (unitOf(path) ?? relative(ROOT, path));
  }
  const alias = Object.keys(ALIASES).find((name) => specifier === name || specifier.startsWith(`${name}/`));
  return alias ? ALIASES[alias] : undefined;
}

/**
 * A relative path into another part of the house: it works in the repository but not once the part is built or
 * published apart (a lib's entry is its alias: `@app/<lib>`, or `@app/<lib>/<entry>` for a lighter one).
 */
function crossesByPath(file: string, specifier: string): boolean {
  if (!specifier.startsWith('.')) return false;
  const target = targetOf(file, specifier);
  return target !== 'test' && target !== unitOf(file);
}

/** Every relative import that leaves its part of the house, as `file: specifier`. */
function relativeCrossings(): string[] {
  return Object.keys(MAY_IMPORT).flatMap((unit) =>
    sourcesUnder(join(ROOT, unit)).flatMap((file) =>
      importsOf(file)
        .filter((specifier) => crossesByPath(file, specifier))
        .map((specifier) => `${relative(ROOT, file)}: ${specifier}`),
    ),
  );
}

/** Every import in the house that its layer does not allow, as `file: specifier (unit)`. */
function upwardImports(): string[] {
  const found: string[] = [];
  for (const unit of Object.keys(MAY_IMPORT)) {
    for (const file of sourcesUnder(join(ROOT, unit))) {
      for (const specifier of importsOf(file)) {
        const target = targetOf(file, specifier);
        if (target === undefined || target === unit) continue;
        if (target === 'test' && /\.(spec|e2e-spec)\.ts$/.test(file)) continue;
        if (!MAY_IMPORT[unit].includes(target)) found.push(`${relative(ROOT, file)}: ${specifier} (${target})`);
      }
    }
  }
  return found;
}

describe('the layers of the house', () => {
  it('names every app, lib and package in its table', () => {
    const present = ['apps', 'libs', 'packages'].flatMap((top) =>
      readdirSync(join(ROOT, top))
        .filter((entry) => statSync(join(ROOT, top, entry)).isDirectory())
        .map((entry) => `${top}/${entry}`),
    );
    expect(present.sort()).toEqual(Object.keys(MAY_IMPORT).sort());
  });

  it('has no import that runs upward or sideways out of its layer', () => {
    expect(upwardImports()).toEqual([]);
  });

  it('crosses into another part by its alias, never by a relative path', () => {
    expect(relativeCrossings()).toEqual([]);
  });

  it('sees a relative path into another part (the check itself can fail)', () => {
    expect(crossesByPath(join(ROOT, 'packages/worker/src/index.ts'), '../../../libs/streams/src/health')).toBe(true);
    expect(crossesByPath(join(ROOT, 'packages/worker/src/operations/worker-health.checks.ts'), '../coordinator.health')).toBe(false);
    expect(crossesByPath(join(ROOT, 'libs/streams/src/health/redis.health.spec.ts'), '../../../../test/support/redis')).toBe(false);
  });

  it('sees an import that runs upward (the check itself can fail)', () => {
    expect(targetOf(join(ROOT, 'libs/streams/src/index.ts'), '@app/persistence')).toBe('libs/persistence');
    expect(MAY_IMPORT['libs/streams']).not.toContain(targetOf(join(ROOT, 'libs/streams/src/index.ts'), '@app/persistence'));
    expect(targetOf(join(ROOT, 'packages/worker/src/index.ts'), '../../../libs/run-store/src')).toBe('libs/run-store');
    expect(targetOf(join(ROOT, 'apps/coordinator/src/main.ts'), '@nest-durable/worker/redis')).toBe('packages/worker');
    expect(importsOf(join(ROOT, 'apps/coordinator/src/coordinator.module.ts'))).toContain('@app/persistence');
  });
});
