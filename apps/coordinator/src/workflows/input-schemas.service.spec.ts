import { describe, expect, it } from '@jest/globals';
import type { InputSchemaRow } from '@app/persistence';
import { InvalidRequestError } from '@nest-durable/common';
import { INPUT_SCHEMAS_FRESH_MS, INPUT_SCHEMAS_KNOWN_MAX, InputSchemas } from './input-schemas.service';

const EMAIL = { type: 'object', required: ['email'], properties: { email: { type: 'string' } } };

/** InputSchemas over a registry of `rows` (mutable), counting its reads, with a clock the test moves. */
function cache(rows: InputSchemaRow[]) {
  const reads: string[][] = [];
  let gate: Promise<void> = Promise.resolve();
  const clock = { now: 0 };
  const schemas = new InputSchemas(
    async (versions) => {
      reads.push(versions.map((v) => `${v.workflow} ${v.version}`));
      await gate;
      return rows.filter((row) => versions.some((v) => v.workflow === row.workflow && v.version === row.version)).map((row) => ({ ...row }));
    },
    () => clock.now,
  );
  return {
    schemas,
    reads,
    clock,
    hold() {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        release();
        gate = Promise.resolve();
      };
    },
  };
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('accepted');
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(InvalidRequestError);
      return [(error as InvalidRequestError).reason, (error as Error).message];
    },
  );

describe('InputSchemas', () => {
  it('refuses an input that does not match its version’s schema with the path of the first mismatch; accepts one that does', async () => {
    const { schemas } = cache([{ workflow: 'signup', version: '1', inputSchema: EMAIL }]);
    expect(await schemas.check([{ workflow: 'signup', version: '1', input: { email: 'a@b.c' } }])).toEqual([undefined]);
    expect(await refusal(schemas.check([{ workflow: 'signup', version: '1', input: { email: 5 } }]))).toEqual([
      'invalid_input',
      'input/email: Expected string',
    ]);
    expect(await refusal(schemas.check([{ workflow: 'signup', version: '1', input: null }]))).toEqual(['invalid_input', 'input: Expected object']);
  });

  it('names the start of a batch that failed, and accepts any input of a version without a schema', async () => {
    const { schemas } = cache([
      { workflow: 'signup', version: '1', inputSchema: EMAIL },
      { workflow: 'free', version: '1', inputSchema: null },
    ]);
    const batch = [
      { workflow: 'free', version: '1', input: [1, 'anything'] },
      { workflow: 'signup', version: '1', input: { email: 'a@b.c' } },
      { workflow: 'signup', version: '1', input: {} },
    ];
    expect(await refusal(schemas.check(batch, (index) => `runs[${index}].`))).toEqual(['invalid_input', 'runs[2].input/email: Expected required property']);
    expect(await schemas.check(batch.slice(0, 2))).toEqual([undefined, undefined]);
  });

  it('warns of a start of a version no worker registered, and starts it all the same', async () => {
    const { schemas } = cache([{ workflow: 'signup', version: '1', inputSchema: null }]);
    const [warning, none] = await schemas.check([
      { workflow: 'sigup', version: '1', input: null },
      { workflow: 'signup', version: '1', input: null },
    ]);
    expect(warning).toEqual({ reason: 'unregistered_workflow_version', message: expect.stringContaining('no worker has registered sigup 1') });
    expect(none).toBeUndefined();
  });

  it('reads a version once for all the starts that wait for it, then answers from memory until the read is old', async () => {
    const rows: InputSchemaRow[] = [{ workflow: 'signup', version: '1', inputSchema: EMAIL }];
    const { schemas, reads, clock, hold } = cache(rows);
    const release = hold();
    const starts = [1, 2, 3].map(() => schemas.check([{ workflow: 'signup', version: '1', input: { email: 'a@b.c' } }]));
    release();
    await Promise.all(starts);
    await schemas.check([{ workflow: 'signup', version: '1', input: { email: 'a@b.c' } }]);
    expect(reads).toEqual([['signup 1']]);

    // Another coordinator recorded a new schema: this one checks against it once its read is older than the window.
    rows[0].inputSchema = { type: 'object', required: ['phone'] };
    clock.now = INPUT_SCHEMAS_FRESH_MS;
    await schemas.check([{ workflow: 'signup', version: '1', input: { email: 'a@b.c' } }]);
    expect(reads).toHaveLength(1);
    clock.now = INPUT_SCHEMAS_FRESH_MS + 1;
    // The start that finds the read old goes on with it (no wait) and reads again behind it.
    await schemas.check([{ workflow: 'signup', version: '1', input: { email: 'a@b.c' } }]);
    expect(reads).toHaveLength(2);
    // The read behind it has settled once the queue of pending callbacks ran (it waits on nothing else).
    await new Promise((resolve) => setImmediate(resolve));
    expect(await refusal(schemas.check([{ workflow: 'signup', version: '1', input: { email: 'a@b.c' } }]))).toEqual([
      'invalid_input',
      'input/phone: Expected required property',
    ]);
  });

  it('reads a stale version again before refusing or warning of a start by it (a refusal is final for a client)', async () => {
    const rows: InputSchemaRow[] = [{ workflow: 'signup', version: '1', inputSchema: EMAIL }];
    const { schemas, reads, clock } = cache(rows);
    expect(await refusal(schemas.check([{ workflow: 'signup', version: '1', input: { phone: '555' } }]))).toEqual([
      'invalid_input',
      'input/email: Expected required property',
    ]);
    expect(await schemas.check([{ workflow: 'later', version: '1', input: null }])).toEqual([
      expect.objectContaining({ reason: 'unregistered_workflow_version' }),
    ]);
    expect(reads).toEqual([['signup 1'], ['later 1']]);

    // Meanwhile, at another coordinator: the schema now takes a phone, and a worker registered `later`.
    rows[0].inputSchema = { type: 'object', required: ['phone'] };
    rows.push({ workflow: 'later', version: '1', inputSchema: null });
    clock.now = INPUT_SCHEMAS_FRESH_MS + 1;
    await expect(schemas.check([{ workflow: 'signup', version: '1', input: { phone: '555' } }])).resolves.toEqual([undefined]);
    await expect(schemas.check([{ workflow: 'later', version: '1', input: null }])).resolves.toEqual([undefined]);
    expect(reads).toEqual([['signup 1'], ['later 1'], ['signup 1'], ['later 1']]);
  });

  it('trusts what it read for another window when reading it again fails, instead of trying again at every start', async () => {
    const rows: InputSchemaRow[] = [{ workflow: 'signup', version: '1', inputSchema: EMAIL }];
    const reads: number[] = [];
    const clock = { now: 0 };
    let down = false;
    const schemas = new InputSchemas(
      async (versions) => {
        reads.push(clock.now);
        if (down) throw new Error('the database is unavailable');
        return rows.filter((row) => versions.some((v) => v.workflow === row.workflow));
      },
      () => clock.now,
    );
    const start = [{ workflow: 'signup', version: '1', input: { email: 'a@b.c' } }];
    await schemas.check(start);
    down = true;
    clock.now = INPUT_SCHEMAS_FRESH_MS + 1;
    for (let i = 0; i < 5; i++) {
      await expect(schemas.check(start)).resolves.toEqual([undefined]);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(reads).toEqual([0, INPUT_SCHEMAS_FRESH_MS + 1]);
  });

  it('takes a registration at this coordinator at once, and compiles a schema again only when it changed', async () => {
    const { schemas, reads } = cache([]);
    expect((await schemas.check([{ workflow: 'signup', version: '1', input: 1 }]))[0]?.reason).toBe('unregistered_workflow_version');
    schemas.registered([{ name: 'signup', version: '1', shards: [], inputSchema: EMAIL }]);
    expect(await refusal(schemas.check([{ workflow: 'signup', version: '1', input: 1 }]))).toEqual(['invalid_input', 'input: Expected object']);
    const compiled = (schemas as unknown as { known: Map<string, { check: unknown }> }).known.get('signup\u00001')!.check;
    // The same schema, its keys in another order (as jsonb gives it back): the same check.
    schemas.registered([{ name: 'signup', version: '1', shards: [], inputSchema: { properties: EMAIL.properties, required: ['email'], type: 'object' } }]);
    expect((schemas as unknown as { known: Map<string, { check: unknown }> }).known.get('signup\u00001')!.check).toBe(compiled);
    schemas.registered([{ name: 'signup', version: '1', shards: [] }]);
    expect(await schemas.check([{ workflow: 'signup', version: '1', input: 1 }])).toEqual([undefined]);
    expect(reads).toHaveLength(1);
  });

  it('forgets the least recently read versions beyond INPUT_SCHEMAS_KNOWN_MAX', async () => {
    const { schemas, reads } = cache([]);
    const names = Array.from({ length: INPUT_SCHEMAS_KNOWN_MAX + 1 }, (_, index) => ({ workflow: `w${index}`, version: '1', input: null }));
    await schemas.check(names);
    expect((schemas as unknown as { known: Map<string, unknown> }).known.size).toBe(INPUT_SCHEMAS_KNOWN_MAX);
    await schemas.check([names[1]]);
    expect(reads).toHaveLength(1);
    await schemas.check([names[0]]);
    expect(reads).toHaveLength(2);
  });

  it('keeps a registration made here over a read that began before it', async () => {
    const { schemas, clock, hold } = cache([{ workflow: 'signup', version: '1', inputSchema: null }]);
    await schemas.check([{ workflow: 'signup', version: '1', input: 1 }]);
    clock.now = INPUT_SCHEMAS_FRESH_MS + 1;
    const release = hold();
    // This start reads again behind it (the read waits); meanwhile a worker registers a schema here.
    await schemas.check([{ workflow: 'signup', version: '1', input: 1 }]);
    clock.now += 1;
    schemas.registered([{ name: 'signup', version: '1', shards: [], inputSchema: EMAIL }]);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(await refusal(schemas.check([{ workflow: 'signup', version: '1', input: 1 }]))).toEqual(['invalid_input', 'input: Expected object']);
  });
});
