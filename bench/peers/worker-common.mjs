// Shared by the peer worker processes: handler timestamps, kept in memory and reported to the
// orchestrator (run-peers.mjs) over the IPC channel, so the peers' stores are not touched by it.
// The machine's monotonic clock in ms, which every process of the machine shares (see bench/support.ts, machineNow).
export const now = () => Number(process.hrtime.bigint()) / 1e6;

const stats = new Map();
const entry = (tag) => {
  let s = stats.get(tag);
  if (!s) {
    s = { count: 0, firstStart: null, lastEnd: null };
    stats.set(tag, s);
  }
  return s;
};
/** A job (or the first step of a chain) started at `at`. */
export function started(tag, at = now()) {
  const s = entry(tag);
  if (s.firstStart === null || at < s.firstStart) s.firstStart = at;
}
/** A job (or the last step of a chain) finished at `at`. */
export function finished(tag, at = now()) {
  const s = entry(tag);
  s.count += 1;
  if (s.lastEnd === null || at > s.lastEnd) s.lastEnd = at;
}
/** Side channel for peers without a result API (graphile-worker): tell the orchestrator. */
export function report(message) {
  process.send?.(message);
}

process.on('message', (m) => {
  if (m?.type === 'stats') process.send({ type: 'stats', id: m.id, stats: stats.get(m.tag) ?? { count: 0, firstStart: null, lastEnd: null } });
});
// If the orchestrator dies, do not linger.
process.on('disconnect', () => process.exit(0));

/** Tell the orchestrator the worker is ready; `details` (such as a port) go with it. */
export function ready(details = {}) {
  process.send({ type: 'ready', ...details });
}

/** Run `stop` on SIGTERM, then exit. */
export function onStop(stop) {
  let stopping = false;
  process.on('SIGTERM', async () => {
    if (stopping) return;
    stopping = true;
    try {
      await stop();
    } finally {
      process.exit(0);
    }
  });
}
