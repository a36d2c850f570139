// NestJS 12 ships ESM-only packages; Jest runs CommonJS here, so swc transforms our TypeScript
// and those packages (see TOOLCHAIN notes in docs/development.md).
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
  testEnvironment: 'node',
  testRegex: '(apps|libs|test)/.*\\.(spec|e2e-spec)\\.ts$',
  moduleFileExtensions: ['ts', 'js', 'mjs', 'json'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', swcTs],
    '^.+\\.m?js$': ['@swc/jest', swcJs],
  },
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|file-type|strtok3|token-types|@tokenizer|uint8array-extras)/)'],
  moduleNameMapper: {
    '^@app/(config|contracts|persistence|locking|metrics|outbox|streams|sdk)$': '<rootDir>/libs/$1/src',
  },
  testTimeout: 30000,
};
