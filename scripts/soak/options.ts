import { parseArgs } from 'node:util';

export const MODES = ['http', 'redis-zset', 'redis-streams'] as const;
export type Mode = (typeof MODES)[number];

export interface SoakOptions {
  modes: Mode[];
  /** Runs started in each mode. */
  runs: number;
  /** Runs started per second while the faults happen. */
  rate: number;
  workers: number;
  concurrency: number;
  /** Seeds the runs' inputs and the random choices (which victim, among those holding runs), so a soak can be run again alike. */
  seed: number;
  /** Keep the logs directory even when every check passed. */
  keepLogs: boolean;
}

/** The engine's timing settings during the soak: short, so recovery takes seconds. */
export const TIMING = {
  heartbeatIntervalMs: 300,
  claimMinIdleTimeMs: 1_500,
  /** A SIGSTOPped worker stays stopped this long: three idle times, so its runs are surely taken over. */
  stopMs: 4_500,
  /** Redis stays down this long before it restarts (empty). */
  redisDownMs: 2_000,
  /** A worker is killed this often (away from the other faults). */
  killEveryMs: 3_000,
};

const USAGE = `usage: npm run soak -- [--mode http|redis-zset|redis-streams]... [--runs N] [--rate N] [--workers N] [--concurrency N] [--seed N] [--keep-logs]`;

export function parseOptions(argv: string[]): SoakOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      mode: { type: 'string', multiple: true },
      runs: { type: 'string', default: '2500' },
      rate: { type: 'string', default: '25' },
      workers: { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '10' },
      seed: { type: 'string', default: String(Date.now() % 1_000_000) },
      'keep-logs': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const modes = (values.mode ?? [...MODES]).flatMap((mode) => mode.split(','));
  for (const mode of modes) if (!(MODES as readonly string[]).includes(mode)) fail(`unknown mode "${mode}"`);
  return {
    modes: modes as Mode[],
    runs: positive('runs', values.runs),
    rate: positive('rate', values.rate),
    workers: positive('workers', values.workers, 2),
    concurrency: positive('concurrency', values.concurrency),
    seed: positive('seed', values.seed, 0),
    keepLogs: values['keep-logs'],
  };
}

function positive(name: string, text: string, min = 1): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) fail(`--${name} must be an integer of at least ${min}`);
  return value;
}

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(64);
}
