// Lets a child process run the apps' TypeScript sources directly (`node -r ./scripts/register-ts.js
// apps/worker/src/main.ts`), so fault tests start real processes without a build step. It compiles
// with swc, like Jest does, and maps the module aliases of tsconfig.json's `paths` to the library sources.
const Module = require('node:module');
const path = require('node:path');
const fs = require('node:fs');
const { transformSync } = require('@swc/core');

const root = path.resolve(__dirname, '..');
const aliases = new Map(
  Object.entries(require(path.join(root, 'tsconfig.json')).compilerOptions.paths).map(([alias, [target]]) => [alias, path.join(root, target, 'index.ts')]),
);

const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  request = aliases.get(request) ?? request;
  try {
    return resolve.call(this, request, parent, ...rest);
  } catch (error) {
    // TypeScript sources import siblings without an extension.
    if (request.startsWith('.') && parent?.filename?.endsWith('.ts')) {
      return resolve.call(this, `${request}.ts`, parent, ...rest);
    }
    throw error;
  }
};

require.extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(fs.readFileSync(filename, 'utf8'), {
    filename,
    sourceMaps: 'inline',
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};
