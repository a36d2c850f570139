import { EXIT_INTERRUPTED } from './exit-codes';
import { runCli } from './program';

// Ctrl-C: nothing is left half-done on our side (every command is one request, or read-only polling).
process.once('SIGINT', () => process.exit(EXIT_INTERRUPTED));

void runCli(
  process.argv.slice(2),
  { url: process.env.WF_URL || undefined, token: process.env.WF_TOKEN || undefined },
  { stdout: process.stdout, stderr: process.stderr },
).then((code) => {
  process.exitCode = code;
});
