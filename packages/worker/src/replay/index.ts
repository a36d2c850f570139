export { HistoryEndedSignal, ReplayContext, type ReplayedRun } from './replay-context';
export {
  type HistorySource,
  ReplayDivergenceError,
  type ReplayedRunResult,
  ReplayOutcomeError,
  type ReplayedWorkflow,
  replayHistories,
  replayRun,
} from './replay-histories';
