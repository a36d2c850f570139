// NestJS 12 ships ESM-only packages; Jest runs CommonJS here, so swc transforms our TypeScript and
// those packages too. Module aliases come from tsconfig.json's `paths` (the one list of them).
const { compilerOptions } = require('./tsconfig.json');
const swcTs = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
  },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
};
const swcJs = { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } };

module.exports = {
  rootDir: '.',
  // Node, with the logs of the apps a test boots shown only when it fails.
  testEnvironment: '<rootDir>/test/support/quiet-environment.js',
  setupFilesAfterEnv: ['<rootDir>/test/support/jest-setup.ts'],
  // Only the monorepo's own code: examples/ are apps of their own, built and tested from a copy
  // (test/example-app.e2e-spec.ts).
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/packages', '<rootDir>/test'],
  testRegex: '(apps|libs|packages|test)/.*\\.(spec|e2e-spec)\\.ts$',
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', swcTs],
    '^.+\\.m?js$': ['@swc/jest', swcJs],
  },
  // ESM-only packages (content-disposition 2 under @fastify/static, whose path has to be let through to reach it).
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|file-type|strtok3|token-types|@tokenizer|uint8array-extras|@fastify/static|content-disposition)/)'],
  moduleNameMapper: Object.fromEntries(
    Object.entries(compilerOptions.paths).map(([alias, [target]]) => [`^${alias}$`, `<rootDir>/${target.replace(/^\.\//, '')}`]),
  ),
  testTimeout: 30000,
  // A run id for what only one suite of a run may do (test/support/packages.ts).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  testSequencer: '<rootDir>/test/support/slow-first-sequencer.js',
};
