export { createTestEnvironment, type TestEnvironment, type TestEnvironmentOptions } from './test-environment';
export { TestEnvironmentError } from './test-environment.error';
// Replaying recorded histories against changed code is a test's job (a CI step before a deploy): written in
// @nest-durable/worker, beside the executor whose step checks it shares, and offered here with the rest of the kit.
export {
  type HistorySource,
  ReplayDivergenceError,
  type ReplayedRunResult,
  type ReplayedWorkflow,
  ReplayOutcomeError,
  replayHistories,
} from '@nest-durable/worker';
