// Microbenchmark of what the coordinator does to a worker-report body (`POST /v1/worker/reports`, the
// worker's write path) once it is parsed from JSON: the depth gate every body passes, then the contract's
// validation of the reports. No HTTP and no database: only the validation's CPU time.
//
//   node -r ./scripts/register-ts.js bench/report-validation.ts [--rounds 7] [--ms 400]
//
// Each case runs a warm-up round, then `rounds` rounds of about `ms` milliseconds of CPU each; it prints the
// median of the rounds' CPU time per body (and the fastest and slowest round), so a noisy moment moves one
// round only. CPU time rather than wall time: on a shared machine, waiting for a core is not validation.
import { parseArgs } from 'node:util';
import { assertJsonDepth, parseReportsRequest } from '@nest-durable/client';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, ms: { type: 'string', default: '400' } } });
const ROUNDS = Number(values.rounds);
const ROUND_MS = Number(values.ms);

const runId = (i: number) => `0195e0b6-${String(1000 + (i % 9000)).padStart(4, '0')}-7000-8000-${String(i).padStart(12, '0')}`;

/** What a task of an order workflow typically returns: a small record, a few nested objects, an array. */
function orderOutput(i: number) {
  return {
    orderId: `ord_${i}`,
    charged: { amount: 4200 + i, currency: 'EUR', provider: 'stripe', reference: `ch_${'a1b2c3d4'.repeat(3)}${i}` },
    items: Array.from({ length: 4 }, (_, n) => ({ sku: `SKU-${n}-${i}`, quantity: n + 1, price: 1050 })),
    customer: { id: `cus_${i}`, email: `customer${i}@example.com`, country: 'DE', tags: ['returning', 'newsletter'] },
    note: 'Paid in full; ship with the standard carrier. Gift wrap: no.',
  };
}

const task = (i: number) => ({
  type: 'task',
  runId: runId(i),
  task: { expectedRevision: 3, key: `charge#${i % 3}`, seq: i % 5, name: 'charge', status: 'completed', attempts: 1, output: orderOutput(i), error: null },
});
const complete = (i: number) => ({ type: 'complete', runId: runId(i), complete: { expectedRevision: 3, output: orderOutput(i) } });
const failure = (i: number) => ({
  type: 'fail',
  runId: runId(i),
  fail: {
    expectedRevision: 3,
    error: {
      name: 'PaymentDeclinedError',
      message: `card declined for order ord_${i}`,
      stack: `PaymentDeclinedError: card declined\n${'    at charge (/app/dist/workflows/order.js:42:11)\n'.repeat(8)}`,
    },
  },
});

const CASES: { name: string; body: () => unknown }[] = [
  // An idle worker sends each write at once: one report per request.
  { name: 'one task result', body: () => ({ reports: [task(1)] }) },
  // A busy worker (50 slots) coalesces: task results, completions and a failure of concurrent runs.
  {
    name: '50 reports (40 tasks, 8 completions, 2 failures)',
    body: () => ({
      reports: [...Array.from({ length: 40 }, (_, i) => task(i)), ...Array.from({ length: 8 }, (_, i) => complete(100 + i)), failure(200), failure(201)],
    }),
  },
  // A large document: a completion whose output is 1,000 records (about 500 KiB of JSON).
  {
    name: 'one completion with a 500 KiB output',
    body: () => ({
      reports: [{ type: 'complete', runId: runId(7), complete: { expectedRevision: 3, output: Array.from({ length: 1_000 }, (_, i) => orderOutput(i)) } }],
    }),
  },
];

function validate(body: unknown): void {
  assertJsonDepth(body);
  parseReportsRequest(body);
}

/** CPU time of this process (µs), which other processes on a shared machine do not inflate as they do wall time. */
function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** CPU time per body (µs) over one round of about ROUND_MS of CPU. */
function round(body: unknown): number {
  let iterations = 0;
  const start = cpuMicros();
  let spent = 0;
  while (spent < ROUND_MS * 1000) {
    for (let i = 0; i < 20; i++) validate(body);
    iterations += 20;
    spent = cpuMicros() - start;
  }
  return spent / iterations;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

console.log(`report validation, ${ROUNDS} rounds of ~${ROUND_MS} ms per case, Node ${process.version}`);
console.log('| body | JSON bytes | median CPU µs per body | fastest–slowest round |');
console.log('|---|---|---|---|');
for (const { name, body: make } of CASES) {
  const body = JSON.parse(JSON.stringify(make()));
  validate(body); // a body the contract refuses would measure the refusal: fail loudly instead
  round(body);
  const rounds = Array.from({ length: ROUNDS }, () => round(body));
  const bytes = Buffer.byteLength(JSON.stringify(body));
  console.log(
    `| ${name} | ${bytes.toLocaleString('en')} | ${median(rounds).toFixed(1)} | ${Math.min(...rounds).toFixed(1)}–${Math.max(...rounds).toFixed(1)} |`,
  );
}
