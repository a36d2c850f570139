// V8's code cache for the modules Jest compiles. Jest compiles every module again in every test file (each has a
// module registry of its own, in a context of its own), and a suite that boots the apps compiles some 1,500 of them:
// the largest single cost of a small suite. Jest has no option for it, so its one call, vm.compileFunction with a
// parsing context, is given the bytecode V8 made the first time (kept by source under Jest's cache directory).
// Loaded by the test environment, in each Jest worker, outside the tests' sandbox.
const vm = require('node:vm');
const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

let installed = false;

/** Makes vm.compileFunction of this process read and write the code cache in `cacheDirectory`. */
function installCodeCache(cacheDirectory) {
  if (installed) return;
  installed = true;
  const dir = join(cacheDirectory, `v8-code-cache-${process.version}`);
  mkdirSync(dir, { recursive: true });
  const compileFunction = vm.compileFunction;
  vm.compileFunction = function (code, params, options) {
    if (!options?.parsingContext || !options.filename || options.cachedData) return compileFunction.call(this, code, params, options);
    const file = join(dir, createHash('sha1').update(options.filename).update('\0').update(code).digest('hex'));
    let cachedData;
    try {
      cachedData = readFileSync(file);
    } catch {
      // Not compiled on this machine yet.
    }
    const compiled = compileFunction.call(this, code, params, { ...options, cachedData, produceCachedData: cachedData === undefined });
    if (compiled.cachedDataProduced) {
      try {
        const partial = `${file}.${process.pid}`;
        writeFileSync(partial, compiled.cachedData);
        renameSync(partial, file); // whole or not at all, for the other workers
      } catch {
        // A cache that cannot be written costs the next test file this compile only.
      }
    }
    return compiled;
  };
}

module.exports = { installCodeCache };
