export * from './branches';
export * from './workflow';
// The errors a workflow throws and catches, its schedule times and the types a workflow is known by (InputOf,
// OutputOf, WorkflowClass) live in @nest-durable/common (one error root for every package, one typing for the
// client and the SDK); re-exported here so that writing a workflow takes one import.
export {
  ChildRunFailedError,
  ChildRunTimeoutError,
  type CheckedSchedule,
  checkDeclaredSchedules,
  DEFAULT_TIMEZONE,
  DurableError,
  type DurableErrorOptions,
  type InputOf,
  InvalidStepError,
  isNonRetryable,
  NonDeterminismError,
  type OutputOf,
  RunLostError,
  RunSuspendedError,
  ScheduleTimes,
  type ScheduleTiming,
  type StepDivergence,
  type StepRef,
  TaskFailedError,
  TaskTimeoutError,
  toErrorDetails,
  type WorkflowClass,
  WorkflowError,
  type WorkflowErrorOptions,
  WorkflowNotHostedError,
} from '@nest-durable/common';
