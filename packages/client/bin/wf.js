#!/usr/bin/env node
// The `wf` command. It is a file of its own, not dist/cli/main.js itself, because npm links a
// workspace's bins at install time, before a build has made dist: a bin in dist would be missing.
'use strict';
try {
  require.resolve('../dist/cli/main.js');
} catch {
  process.stderr.write('wf: @nest-durable/client is not built yet: run `npm run build:packages` first\n');
  process.exit(1);
}
require('../dist/cli/main.js');
