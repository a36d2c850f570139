import { describe, expect, it } from '@jest/globals';
import type { InvalidRequestError } from '@nest-durable/common';
import { Type } from '@sinclair/typebox';
import { defineWorkflow, retryDelayMs, type WorkflowLimits, type WorkflowSchedule } from './workflow';

describe('retryDelayMs', () => {
  it('doubles an exponential wait per attempt up to the cap, without jitter when asked', () => {
    const policy = { maxAttempts: 10, delayMs: 100, maxDelayMs: 1_000, jitter: false };
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelayMs(policy, attempt))).toEqual([100, 200, 400, 800, 1_000]);
  });

  it('draws an exponential wait at random below the cap by default (full jitter)', () => {
    const policy = { maxAttempts: 10, delayMs: 100 };
    expect(retryDelayMs(policy, 3, () => 0)).toBe(0);
    expect(retryDelayMs(policy, 3, () => 0.5)).toBe(200);
    expect(retryDelayMs(policy, 3, () => 0.999)).toBeLessThanOrEqual(400);
  });

  it('waits the same for a fixed policy', () => {
    const policy = { maxAttempts: 3, backoff: 'fixed' as const, delayMs: 250 };
    expect([1, 2, 7].map((attempt) => retryDelayMs(policy, attempt))).toEqual([250, 250, 250]);
  });
});

describe('defineWorkflow limits', () => {
  const define = (limits: WorkflowLimits) => defineWorkflow({ name: 'w', version: '1', limits, handler: async () => null });

  it('keeps limits in range, frozen', () => {
    const workflow = define({ concurrency: 2, concurrencyPerKey: 1, ratePerSecond: 0.5, ratePerKeyPerSecond: 0.25 });
    expect(workflow.limits).toEqual({ concurrency: 2, concurrencyPerKey: 1, ratePerSecond: 0.5, ratePerKeyPerSecond: 0.25 });
    expect(Object.isFrozen(workflow.limits)).toBe(true);
  });

  it('refuses limits the coordinator would refuse, naming the field', () => {
    expect(() => define({ concurrency: 0 })).toThrow('workflow w: limits.concurrency must be an integer from 1 to 100000');
    expect(() => define({ concurrencyPerKey: 1.5 })).toThrow('limits.concurrencyPerKey must be an integer');
    expect(() => define({ ratePerSecond: -1 })).toThrow('limits.ratePerSecond must be a number above 0');
    expect(() => define({ ratePerKeyPerSecond: 0 })).toThrow('limits.ratePerKeyPerSecond must be a number above 0');
    expect(() => define({ rate: 5 } as WorkflowLimits)).toThrow('workflow w: limits.rate is not a limit');
  });
});

describe('defineWorkflow schedules', () => {
  const define = (schedules: WorkflowSchedule[]) => defineWorkflow({ name: 'w', version: '1', schedules, handler: async () => null });
  const refusal = (schedules: WorkflowSchedule[]) => {
    try {
      define(schedules);
      return 'accepted';
    } catch (error) {
      return { reason: (error as InvalidRequestError).reason, message: (error as Error).message };
    }
  };

  it('keeps schedules the coordinator accepts', () => {
    const schedules = [
      { name: 'nightly', cron: '0 30 2 * * *', timezone: 'Europe/Berlin', input: { kind: 'daily' } },
      { name: 'often', intervalMs: 100, overlap: 'allow' as const },
    ];
    expect(define(schedules).schedules).toEqual(schedules);
  });

  it('refuses a schedule the coordinator would refuse, with its reason, naming the schedule', () => {
    expect(refusal([{ name: 'bad', cron: '* * * 13 *' }])).toEqual({
      reason: 'invalid_cron',
      message: expect.stringMatching(/^w 1 schedule bad: cron "\* \* \* 13 \*" is not a cron expression/),
    });
    expect(refusal([{ name: 'bad', cron: '61 * * * * *' }])).toMatchObject({ reason: 'invalid_cron' });
    expect(refusal([{ name: 'bad', cron: '0 0 31 2 *' }])).toEqual({ reason: 'invalid_cron', message: 'w 1 schedule bad: cron "0 0 31 2 *" never fires' });
    expect(refusal([{ name: 'bad', cron: '* * * * *', timezone: 'Nowhere/Land' }])).toMatchObject({ reason: 'invalid_timezone' });
    expect(refusal([{ name: 'bad', intervalMs: 1_000, timezone: 'UTC' }])).toMatchObject({ reason: 'invalid_timezone' });
    expect(refusal([{ name: 'bad', intervalMs: 99 }])).toMatchObject({
      reason: 'invalid_intervalMs',
      message: expect.stringMatching(/^w 1 schedule bad: intervalMs must be/),
    });
    expect(refusal([{ name: 'bad', intervalMs: 1.5 }])).toMatchObject({ reason: 'invalid_intervalMs' });
    expect(refusal([{ name: 'bad' }])).toEqual({ reason: 'invalid_schedule', message: 'w 1 schedule bad: give exactly one of cron and intervalMs' });
    expect(refusal([{ name: 'bad', cron: '* * * * *', intervalMs: 1_000 }])).toMatchObject({ reason: 'invalid_schedule' });
    expect(refusal([{ name: 'bad name!', intervalMs: 1_000 }])).toMatchObject({ reason: 'invalid_schedule_name' });
    expect(refusal([{ name: 'bad', intervalMs: 1_000, at: 'noon' } as WorkflowSchedule])).toMatchObject({ reason: 'unknown_field' });
    expect(
      refusal([
        { name: 'twice', intervalMs: 1_000 },
        { name: 'twice', cron: '* * * * *' },
      ]),
    ).toEqual({ reason: 'invalid_schedules', message: 'w 1 declares the schedule twice twice' });
  });
});

describe('defineWorkflow inputSchema', () => {
  const define = (inputSchema: object, schedules?: WorkflowSchedule[]) =>
    defineWorkflow({ name: 'w', version: '1', inputSchema, schedules, handler: async () => null });
  const refusal = (inputSchema: object, schedules?: WorkflowSchedule[]) => {
    try {
      define(inputSchema, schedules);
    } catch (error) {
      return { reason: (error as InvalidRequestError).reason, message: (error as Error).message };
    }
    throw new Error('accepted');
  };

  it('keeps a TypeBox or a plain JSON Schema object', () => {
    const schema = Type.Object({ email: Type.String() });
    expect(define(schema).inputSchema).toBe(schema);
    expect(define({ type: 'object', required: ['email'] }).inputSchema).toEqual({ type: 'object', required: ['email'] });
  });

  it('refuses one the coordinator could not check, or too large, with a reason', () => {
    expect(refusal([] as object)).toEqual({
      reason: 'invalid_input_schema',
      message: expect.stringContaining('workflow w 1: inputSchema must be a JSON Schema object'),
    });
    expect(refusal({ $ref: '#/x' })).toMatchObject({ reason: 'invalid_input_schema', message: expect.stringContaining('workflow w 1: inputSchema/$ref') });
    expect(refusal(Type.String({ description: 'x'.repeat(20_000) }))).toMatchObject({ reason: 'input_schema_too_large' });
  });

  it("refuses a declared schedule whose input does not match (its runs' starts would be refused)", () => {
    const schema = Type.Object({ email: Type.String() });
    expect(refusal(schema, [{ name: 'daily', cron: '0 0 * * *', input: { email: 1 } }])).toEqual({
      reason: 'invalid_input',
      message: 'workflow w 1: schedule daily: input/email: Expected string',
    });
    expect(define(schema, [{ name: 'daily', cron: '0 0 * * *', input: { email: 'a@b.c' } }]).schedules).toHaveLength(1);
  });
});

describe('defineWorkflow: updates', () => {
  it('keeps declared updates, and refuses a name or an input schema the coordinator would refuse', () => {
    const handler = async () => null;
    expect(defineWorkflow({ name: 'cart', version: '1', updates: { add: { inputSchema: { type: 'string' } }, note: {} }, handler }).updates).toEqual({
      add: { inputSchema: { type: 'string' } },
      note: {},
    });
    expect(() => defineWorkflow({ name: 'cart', version: '1', updates: { 'add item': {} }, handler })).toThrow('update_name');
    expect(() => defineWorkflow({ name: 'cart', version: '1', updates: { add: { inputSchema: { $ref: '#/x' } } }, handler })).toThrow(
      'workflow cart 1: update add:',
    );
  });
});
