export { HistoryEndedSignal, ReplayContext, type ReplayedRun } from './replay-context';
export { type HistorySource, ReplayDivergenceError, type ReplayedRunResult, type ReplayedWorkflow, replayHistories, replayRun } from './replay-histories';
