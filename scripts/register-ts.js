// Lets a child process run the apps' TypeScript sources directly (`node -r ./scripts/register-ts.js
// apps/worker/src/main.ts`), so fault tests start real processes without a build step. It compiles
// with swc, like Jest does, and maps the module aliases of tsconfig.json's `paths` to the library sources.
const Module = require('node:module');
const path = require('node:path');
const fs = require('node:fs');
const crypto = require('node:crypto');

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

const SWC_OPTIONS = {
  sourceMaps: 'inline',
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
  },
  module: { type: 'commonjs' },
};
// Compiled files are kept by their source's hash (with swc's version and options): a test suite starts a hundred
// processes or more, and compiling every source again in each was a fifth of their start-up. swc itself (a native
// binding) is loaded only when something is not cached yet.
const cacheDir = path.join(root, 'node_modules', '.cache', 'register-ts');
let swc;
const salt = `${require('@swc/core/package.json').version}\n${JSON.stringify(SWC_OPTIONS)}`;

function compile(source, filename) {
  const cached = path.join(cacheDir, `${crypto.createHash('sha1').update(salt).update(filename).update(source).digest('hex')}.js`);
  try {
    return fs.readFileSync(cached, 'utf8');
  } catch {
    swc ??= require('@swc/core');
    const { code } = swc.transformSync(source, { filename, ...SWC_OPTIONS });
    // Written whole under a name of its own, then renamed: processes starting at once never read half a file.
    const partial = `${cached}.${process.pid}`;
    try {
      fs.mkdirSync(cacheDir, { recursive: true });
      fs.writeFileSync(partial, code);
      fs.renameSync(partial, cached);
    } catch {
      // A cache that cannot be written only costs the next process this compilation.
    }
    return code;
  }
}

require.extensions['.ts'] = (module, filename) => {
  module._compile(compile(fs.readFileSync(filename, 'utf8'), filename), filename);
};
