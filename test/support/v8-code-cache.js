// V8's code cache for the modules Jest compiles. Jest compiles every module again in every test file (each has a
// module registry of its own, in a context of its own), and a suite that boots the apps compiles some 1,500 of them:
// the largest single cost of a small suite. Jest has no option for it, so its one call, vm.compileFunction with a
// parsing context, is given the bytecode V8 made the first time (kept by source under Jest's cache directory).
// Loaded by the test environment, in each Jest worker, outside the tests' sandbox.
const vm = require('node:vm');
const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

let installed = false;

/** Makes vm.compileFunction of this process read and write the code cache in `cacheDirectory`. */
function installCodeCache(cacheDirectory) {
  if (installed) return;
  installed = true;
  const dir = join(cacheDirectory, `v8-code-cache-${process.version}`);
  try {
    mkdirSync(dir, { recursive: true });
  } catch {
    return; // no cache: every file compiled as without one
  }
  // V8 checks a cached function against its source's length and V8's flags only: the parameters Jest wraps every module
  // in (its config's injected globals) and Jest's version go into the key, or a change of either would run stale code.
  const salt = `${require('jest-runtime/package.json').version}\0`;
  const compileFunction = vm.compileFunction;
  vm.compileFunction = function (code, params, options) {
    if (!options?.parsingContext || !options.filename || options.cachedData) return compileFunction.call(this, code, params, options);
    const file = join(
      dir,
      createHash('sha1').update(salt).update(String(params)).update('\0').update(options.filename).update('\0').update(code).digest('hex'),
    );
    let cachedData;
    try {
      cachedData = readFileSync(file);
    } catch {
      // Not compiled on this machine yet.
    }
    const compiled = compileFunction.call(this, code, params, { ...options, cachedData, produceCachedData: cachedData === undefined });
    if (compiled.cachedDataRejected) rmSync(file, { force: true }); // V8 would not take it (its flags changed): made again next time
    if (compiled.cachedDataProduced) {
      const partial = `${file}.${process.pid}`;
      try {
        writeFileSync(partial, compiled.cachedData);
        renameSync(partial, file); // whole or not at all, for the other workers
      } catch {
        rmSync(partial, { force: true }); // a cache that cannot be written costs the next test file this compile only
      }
    }
    return compiled;
  };
}

module.exports = { installCodeCache };
