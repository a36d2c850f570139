import { describe, expect, it } from '@jest/globals';
import { RunNotFoundError, type RunPage, type RunView } from '@nest-durable/common';
import { fetchHistories, historyLine, parseHistories } from './run-histories';
import type { WorkflowClient } from './workflow.client';

const view = (id: string) => ({ id, workflow: 'order', version: '1', status: 'completed', attempt: 1, input: null }) as RunView;

/** A client over three runs listed two a page; `gone` is listed but deleted before it is read. */
function clientOf(ids: string[], gone = new Set<string>()) {
  const lists: unknown[] = [];
  const client = {
    async list(options: { limit: number; cursor?: string }): Promise<RunPage> {
      lists.push(options);
      const from = options.cursor ? ids.indexOf(options.cursor) + 1 : 0;
      const page = ids.slice(from, from + Math.min(options.limit, 2));
      return { runs: page.map(view), nextCursor: from + page.length < ids.length ? page[page.length - 1] : null };
    },
    async get(id: string): Promise<RunView> {
      if (gone.has(id)) throw new RunNotFoundError(id);
      return { ...view(id), tasks: [{ key: 'a#1', kind: 'task', seq: 0 }] } as unknown as RunView;
    },
  };
  return { client: client as unknown as WorkflowClient, lists };
}

const collect = async <T>(items: AsyncIterable<T>): Promise<T[]> => {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
};

describe('fetchHistories', () => {
  it("reads every page of the version's runs, each with its steps apart from the run, and skips a run gone meanwhile", async () => {
    const { client, lists } = clientOf(['r1', 'r2', 'r3'], new Set(['r2']));
    const histories = await collect(fetchHistories(client, { workflow: 'order', version: '1' }));
    expect(histories.map((history) => [history.run.id, history.steps.length, 'tasks' in history.run])).toEqual([
      ['r1', 1, false],
      ['r3', 1, false],
    ]);
    expect(lists).toEqual([expect.objectContaining({ workflow: 'order', version: '1', cursor: undefined }), expect.objectContaining({ cursor: 'r2' })]);
  });

  it('stops at its limit', async () => {
    const { client } = clientOf(['r1', 'r2', 'r3']);
    expect((await collect(fetchHistories(client, { workflow: 'order', version: '1', limit: 1 }))).map((history) => history.run.id)).toEqual(['r1']);
  });
});

describe('parseHistories', () => {
  it('reads back the lines historyLine writes, and names a line that is not a history', () => {
    const history = { run: view('r1'), steps: [] };
    expect(parseHistories(`${historyLine(history)}\n${historyLine(history)}`)).toHaveLength(2);
    expect(() => parseHistories(`${historyLine(history)}not json\n`)).toThrow('line 2 is not a recorded history ({run, steps})');
    expect(() => parseHistories('{"run":{"id":"r1"},"steps":[]}')).toThrow('line 1 is not a recorded history');
  });
});
