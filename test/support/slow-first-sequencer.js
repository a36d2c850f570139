// Starts the suites that take a minute or more first, so that a parallel run does not end with one of them running
// alone. Jest orders by the durations it recorded on this machine, but a fresh clone (CI) has none and falls back
// to file size, which started minute-long suites four minutes in.
const Sequencer = require('@jest/test-sequencer').default;

/** The longest suites, longest first (30 to 230 s each in a three-worker run here, 2026-12-07). */
const SLOWEST = ['example-app', 'redis-cluster', 'flow-control', 'coordinators', 'cli', 'schedules', 'heartbeat-contention'];

const rank = (path) => {
  const index = SLOWEST.findIndex((name) => path.endsWith(`/test/${name}.e2e-spec.ts`));
  return index === -1 ? SLOWEST.length : index;
};

module.exports = class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    // Array#sort is stable: the rest keep Jest's order (failed first, then by recorded duration or size).
    return super.sort(tests).sort((a, b) => rank(a.path) - rank(b.path));
  }
};
