import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';

const ROOT = join(__dirname, '..');

interface LockedPackage {
  version?: string;
  engines?: { node?: string } | string[];
}

/**
 * `npm ci` warns (EBADENGINE) about every installed package whose `engines.node` leaves out the Node it runs on.
 * Each package the lockfile installs must therefore admit every Node the project's own `engines.node` admits, or a
 * dependency bump that wants a newer Node (as the Nest 12 stack's did, 57 warnings) comes back without a word.
 * Where one does, pin a release that supports the declared range (package.json `overrides`).
 */
describe('the lockfile against the declared Node engines', () => {
  const declared: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines.node;
  const lock: { packages: Record<string, LockedPackage> } = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));

  it('declares a Node range the Node running the tests is in', () => {
    expect(semver.satisfies(process.versions.node, declared)).toBe(true);
  });

  it('is the range every published package and the example app declare (their users meet the same dependencies)', () => {
    const manifests = ['client', 'common', 'testing', 'worker', 'workflow']
      .map((name) => `packages/${name}/package.json`)
      .concat('examples/nest-app/package.json');
    const differing = manifests
      .map((manifest) => ({ manifest, node: JSON.parse(readFileSync(join(ROOT, manifest), 'utf8')).engines?.node }))
      .filter(({ node }) => node !== declared)
      .map(({ manifest, node }) => `${manifest}: ${node}`);
    expect(differing).toEqual([]);
  });

  it('installs no package whose engines exclude part of the declared range', () => {
    const excluding = Object.entries(lock.packages)
      .map(([path, entry]) => ({ path, version: entry.version, node: Array.isArray(entry.engines) ? undefined : entry.engines?.node }))
      .filter((entry) => entry.node !== undefined && !semver.subset(declared, entry.node))
      .map(({ path, version, node }) => `${path || '(the project)'}@${version} wants node ${node}`);
    expect(excluding).toEqual([]);
  });
});
