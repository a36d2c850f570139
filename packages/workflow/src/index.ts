export * from './workflow';
// The errors a workflow throws and catches and its schedule times live in @nest-durable/common (one error root
// for every package); re-exported here so that writing a workflow takes one import.
export {
  ChildRunFailedError,
  ChildRunTimeoutError,
  type CheckedSchedule,
  checkDeclaredSchedules,
  DEFAULT_TIMEZONE,
  DurableError,
  type DurableErrorOptions,
  isNonRetryable,
  NonDeterminismError,
  RunLostError,
  RunSuspendedError,
  ScheduleTimes,
  type ScheduleTiming,
  TaskFailedError,
  TaskTimeoutError,
  toErrorDetails,
  WorkflowError,
  type WorkflowErrorOptions,
} from '@nest-durable/common';
