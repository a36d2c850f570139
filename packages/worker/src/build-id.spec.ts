import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultBuildId } from './build-id';

describe('defaultBuildId', () => {
  let root: string;
  /** Writes `json` as the package.json of `dir` (under root) and returns that directory. */
  const packageAt = (dir: string, json: object) => {
    const at = join(root, dir);
    mkdirSync(at, { recursive: true });
    writeFileSync(join(at, 'package.json'), JSON.stringify(json));
    return at;
  };
  /** This package's directory: where its own package.json is found. */
  let workerPackage: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'build-id-'));
    packageAt('app', { name: 'orders-worker', version: '3.2.1' });
    mkdirSync(join(root, 'app/dist/src'), { recursive: true });
    packageAt('app/node_modules/jest', { name: 'jest', version: '30.0.0' });
    packageAt('bare', {});
    mkdirSync(join(root, 'bare/dist'), { recursive: true });
    workerPackage = packageAt('bare/node_modules/@nest-durable/worker', { name: '@nest-durable/worker', version: '0.9.0' });
    mkdirSync(join(workerPackage, 'dist/src'), { recursive: true });
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it("is the version of the app's package.json, the nearest above its entry script", () => {
    expect(defaultBuildId(join(root, 'app/dist/src/main.js'), join(workerPackage, 'dist/src'))).toBe('3.2.1');
  });

  it('looks above node_modules when the entry is a tool that loaded the app (jest, a launcher)', () => {
    expect(defaultBuildId(join(root, 'app/node_modules/jest/bin/jest.js'), join(workerPackage, 'dist/src'))).toBe('3.2.1');
  });

  it("falls back to @nest-durable/worker's version when the app's package.json has none (or there is no entry)", () => {
    expect(defaultBuildId(join(root, 'bare/dist/main.js'), join(workerPackage, 'dist/src'))).toBe('0.9.0');
    expect(defaultBuildId(undefined, join(workerPackage, 'dist/src'))).toBe('0.9.0');
  });

  it('skips a version that is no valid build id', () => {
    const app = packageAt('odd', { name: 'odd', version: 'next release' });
    expect(defaultBuildId(join(app, 'main.js'), join(workerPackage, 'dist/src'))).toBe('0.9.0');
  });

  it("finds this package's own version from its sources too", () => {
    const own = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string };
    expect(defaultBuildId(undefined)).toBe(own.version);
  });
});
