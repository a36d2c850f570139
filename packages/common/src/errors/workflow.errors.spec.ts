import { describe, expect, it } from '@jest/globals';
import { DurableError } from './durable.error';
import {
  ChildRunFailedError,
  ChildRunTimeoutError,
  isNonRetryable,
  NonDeterminismError,
  RunLostError,
  RunSuspendedError,
  TaskFailedError,
  TaskTimeoutError,
  WorkflowError,
} from './workflow.errors';

describe('WorkflowError', () => {
  it('is retryable unless it says otherwise', () => {
    expect(new WorkflowError('try again').nonRetryable).toBe(false);
    expect(new WorkflowError('card declined', { nonRetryable: true }).nonRetryable).toBe(true);
  });

  it('names a subclass after it, and keeps what caused it', () => {
    class CardDeclinedError extends WorkflowError {}
    const cause = new Error('402 from the bank');
    const error = new CardDeclinedError('card declined', { nonRetryable: true, cause });
    expect([error.name, error.message, error.cause]).toEqual(['CardDeclinedError', 'card declined', cause]);
    expect(error).toBeInstanceOf(WorkflowError);
  });

  it('is a DurableError of reason workflow_error, or of the reason it is given', () => {
    expect(new WorkflowError('card declined')).toBeInstanceOf(DurableError);
    expect([new WorkflowError('card declined').reason, new WorkflowError('card declined', { reason: 'card_declined' }).reason]).toEqual([
      'workflow_error',
      'card_declined',
    ]);
  });

  it('is the base of every error of the engine, each of its own reason', () => {
    const errors = [
      new RunLostError('r', 'why'),
      new RunSuspendedError('r', 'sleep:a#1'),
      new TaskFailedError('a#1', { name: 'Error', message: 'boom' }),
      new TaskTimeoutError('a#1', 10),
      new NonDeterminismError('changed'),
      new ChildRunFailedError('c', 'failed', null),
      new ChildRunTimeoutError('child:c#1'),
    ];
    for (const error of errors) expect(error).toBeInstanceOf(WorkflowError);
    expect(errors.map((error) => error.name)).toEqual([
      'RunLostError',
      'RunSuspendedError',
      'TaskFailedError',
      'TaskTimeoutError',
      'NonDeterminismError',
      'ChildRunFailedError',
      'ChildRunTimeoutError',
    ]);
    expect(errors.map((error) => error.reason)).toEqual([
      'run_lost',
      'run_suspended',
      'task_failed',
      'task_timeout',
      'non_determinism',
      'child_run_failed',
      'child_run_timeout',
    ]);
  });

  it('a non-determinism error is not retryable: running the same code again meets the same history', () => {
    expect(new NonDeterminismError('changed').nonRetryable).toBe(true);
  });
});

describe('isNonRetryable', () => {
  it('is true for an error flagged nonRetryable, of whichever class (a second copy of this package, your own)', () => {
    expect(isNonRetryable(new WorkflowError('no', { nonRetryable: true }))).toBe(true);
    expect(isNonRetryable(Object.assign(new Error('no'), { nonRetryable: true }))).toBe(true);
  });

  it('is false for anything else', () => {
    expect([new WorkflowError('maybe'), new Error('maybe'), 'text', { nonRetryable: true }, null].map(isNonRetryable)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
