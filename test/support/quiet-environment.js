// The Node test environment, quiet: the log lines of the apps a test boots (collected by
// CapturedLogger in captured-logs.ts) are kept per test and printed only when that test or a hook
// fails, so a passing suite prints nothing of theirs and a failing one shows what led up to it.
const { TestEnvironment } = require('jest-environment-node');
const { installCodeCache } = require('./v8-code-cache');

class QuietEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    installCodeCache(config.projectConfig.cacheDirectory);
  }

  handleTestEvent(event) {
    if (event.name === 'test_start') this.global.__capturedLogs = [];
    if (event.name === 'test_done' && event.test.errors.length > 0) this.print(event.test.name);
    if (event.name === 'hook_failure') this.print(`${event.hook.type} hook`);
  }

  print(title) {
    const lines = this.global.__capturedLogs ?? [];
    this.global.__capturedLogs = [];
    if (lines.length === 0) return;
    process.stderr.write(`\n--- app logs during "${title}" (${lines.length} lines) ---\n${lines.join('\n')}\n---\n`);
  }
}

module.exports = QuietEnvironment;
