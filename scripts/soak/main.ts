// `npm run soak`: a few thousand multi-step runs in each dispatch mode while workers are killed
// and stopped, the coordinator's connections terminated, the coordinator killed, Redis and
// PostgreSQL restarted; then checks the engine's promises (docs/reliability.md) and reports how
// long recovery took. Exits non-zero on any violation, with its evidence.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopAllProcesses } from '../../test/support/processes';
import { Servers } from './cluster';
import { type ModeResult, soakMode } from './mode';
import { parseOptions, TIMING } from './options';
import { summaryTable, violationReport } from './report';
import { Violations, Watchdog } from './violations';

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const workDir = mkdtempSync(join(tmpdir(), 'wf-soak-'));
  const violations = new Violations();
  const watchdog = new Watchdog(violations);
  const servers = new Servers(watchdog);
  const abort = new AbortController();
  // Ctrl-C reaches the whole process group: the children stop too, and their exits are ours.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (abort.signal.aborted) return;
      process.stdout.write(`\n[soak] ${signal}: stopping every process the soak started\n`);
      watchdog.close();
      abort.abort();
    });
  }
  process.stdout.write(
    `[soak] modes ${options.modes.join(', ')}; ${options.runs} runs each at ${options.rate}/s; ${options.workers} workers × ${options.concurrency}; ` +
      `heartbeat ${TIMING.heartbeatIntervalMs} ms, idle ${TIMING.claimMinIdleTimeMs} ms; seed ${options.seed}; logs in ${workDir}\n`,
  );
  const results: ModeResult[] = [];
  const began = Date.now();
  try {
    await servers.startPostgres();
    for (const mode of options.modes) {
      if (abort.signal.aborted) break;
      violations.scope = mode;
      // A mode that cannot finish is reported, and the next one still runs.
      await soakMode(mode, options, servers, workDir, violations, abort.signal).then(
        (result) => results.push(result),
        (error: Error) => !abort.signal.aborted && violations.add('the soak runs to its end', error.stack ?? String(error)),
      );
    }
  } catch (error) {
    if (!abort.signal.aborted) violations.add('the soak runs to its end', (error as Error).stack ?? String(error));
  } finally {
    watchdog.close();
    await stopAllProcesses();
    await servers.stop().catch(() => undefined);
    if (servers.postgres) writeFileSync(join(workDir, 'postgres.log'), servers.postgres.output);
    if (servers.redis) writeFileSync(join(workDir, 'redis.log'), servers.redis.output);
  }
  if (abort.signal.aborted) {
    process.stdout.write(`[soak] interrupted; logs in ${workDir}\n`);
    return 130;
  }
  writeFileSync(join(workDir, 'violations.json'), JSON.stringify(violations.list, null, 2));
  process.stdout.write(`\n${summaryTable(options, results, violations)}\n`);
  process.stdout.write(`\n[soak] ${Math.round((Date.now() - began) / 1000)} s in all\n`);
  if (violations.list.length === 0) {
    if (!options.keepLogs) rmSync(workDir, { recursive: true, force: true });
    process.stdout.write(`[soak] every promise held${options.keepLogs ? `; logs in ${workDir}` : ''}\n`);
    return 0;
  }
  process.stdout.write(`${violationReport(violations)}\n\n[soak] ${violations.list.length} violations; every process's log is in ${workDir}\n`);
  return 1;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  },
);
