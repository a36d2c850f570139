import { describe, expect, it } from '@jest/globals';
import { getEventListeners } from 'node:events';
import { type ClaimedRun } from '@nest-durable/common';
import { answeredError } from '@nest-durable/client';
import type { CoordinatorApi } from '../coordinator.api';
import type { WorkflowRegistry } from '../workflow.registry';
import { HandOffOffers } from './hand-off-offers';

const run = (id: string): ClaimedRun => ({ id, workflow: 'echo', version: '1', queue: 'echo:1', revision: 1, attempt: 1, input: null, tasks: [] });
const running = new AbortController().signal;

/** Something that settles later, from the test. */
function later<T>() {
  let settle!: (value: T) => void;
  let fail!: (error: unknown) => void;
  const promise = new Promise<T>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  return { promise, settle, fail };
}

/** The offers of a worker, over a coordinator whose offers answer when the test says. */
function offers() {
  const made: { answer: ReturnType<typeof later<ClaimedRun[]>>; withdrawn: boolean }[] = [];
  /** What a withdrawal answers: whether the offer waited at the coordinator it was sent to. */
  const coordinator = { knowsOffers: true };
  const released: string[] = [];
  const api = {
    offer: () => {
      const offer = { answer: later<ClaimedRun[]>(), withdrawn: false };
      made.push(offer);
      return {
        answer: offer.answer.promise,
        withdraw: async () => {
          offer.withdrawn = true;
          return coordinator.knowsOffers;
        },
      };
    },
    release: async (id: string) => void released.push(id),
  };
  const registry = { refs: () => [{ name: 'echo', version: '1' }] };
  const subject = new HandOffOffers(api as unknown as CoordinatorApi, registry as unknown as WorkflowRegistry, { claimWaitMs: 20_000 });
  return { subject, made, released, coordinator };
}

/** A read of the transport that answers when the test says, recording its limit and whether it was stopped. */
function reader() {
  const reads: { limit: number; signal: AbortSignal; result: ReturnType<typeof later<ClaimedRun[]>> }[] = [];
  const read = (limit: number, signal: AbortSignal) => {
    const result = later<ClaimedRun[]>();
    signal.addEventListener('abort', () => result.settle([]), { once: true });
    reads.push({ limit, signal, result });
    return result.promise;
  };
  return { read, reads };
}

describe('hand-off offers around a transport read', () => {
  it('offers a worker with free slots, reading for one run fewer; a handed run stops the read and comes first', async () => {
    const { subject, made } = offers();
    const { read, reads } = reader();
    const call = subject.around(4, running, read);
    expect(made).toHaveLength(1);
    expect(reads.map((r) => r.limit)).toEqual([3]);
    made[0].answer.settle([run('handed')]);
    expect(await call).toEqual([run('handed')]);
    expect(reads[0].signal.aborted).toBe(true);
    expect(made[0].withdrawn).toBe(false);
    // Nothing is left listening on the runtime's signal, which lives as long as the worker.
    expect(getEventListeners(running, 'abort')).toHaveLength(0);
  });

  it('keeps the offer while the read brings runs, and withdraws it when the worker is down to its slot', async () => {
    const { subject, made } = offers();
    const { read, reads } = reader();
    const call = subject.around(4, running, read);
    reads[0].result.settle([run('a'), run('b')]);
    expect(await call).toEqual([run('a'), run('b')]);
    expect(made[0].withdrawn).toBe(false);
    const second = subject.around(2, running, read);
    expect(reads.map((r) => r.limit)).toEqual([3, 1]);
    reads[1].result.settle([run('c')]);
    expect(await second).toEqual([run('c')]);
    // The one free slot is the offer's: the next call withdraws it, waits for its answer and reads nothing.
    const third = subject.around(1, running, read);
    expect(made[0].withdrawn).toBe(true);
    made[0].answer.settle([run('handed meanwhile')]);
    expect(await third).toEqual([run('handed meanwhile')]);
    expect(reads).toHaveLength(2);
    expect(made).toHaveLength(1);
  });

  it('makes no offer with one free slot (a worker of concurrency 1 among them)', async () => {
    const { subject, made } = offers();
    const { read, reads } = reader();
    const call = subject.around(1, running, read);
    reads[0].result.settle([run('a')]);
    expect(await call).toEqual([run('a')]);
    expect(made).toHaveLength(0);
    expect(reads.map((r) => r.limit)).toEqual([1]);
  });

  it('makes no offer while reads fill the slots they have, and offers again after one that does not', async () => {
    const { subject, made } = offers();
    const { read, reads } = reader();
    // The offer holds one of two slots; the read of the other brings a run: the transport keeps the worker busy.
    const first = subject.around(2, running, read);
    reads[0].result.settle([run('a')]);
    await first;
    const withdrawing = subject.around(1, running, read); // down to the offer's slot: withdrawn
    made[0].answer.settle([]);
    await withdrawing;
    const busy = subject.around(2, running, read);
    expect(made).toHaveLength(1);
    expect(reads.at(-1)!.limit).toBe(2);
    reads.at(-1)!.result.settle([run('b')]); // one of two: the transport has no more
    await busy;
    void subject.around(2, running, read);
    expect(made).toHaveLength(2);
  });

  it('gives up a withdrawn offer its coordinator does not have, and gives back a run handed to it later', async () => {
    const { subject, made, released, coordinator } = offers();
    const { read, reads } = reader();
    coordinator.knowsOffers = false; // behind a load balancer, the withdrawal reached another coordinator
    const call = subject.around(2, running, read);
    reads[0].result.settle([run('a')]);
    await call;
    expect(await subject.around(1, running, read)).toEqual([]);
    made[0].answer.settle([run('handed late')]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toEqual(['handed late']);
  });

  it('lets the read go on when the offer answers with nothing (its waitMs passed, or it failed)', async () => {
    const { subject, made } = offers();
    const { read, reads } = reader();
    const call = subject.around(4, running, read);
    made[0].answer.fail(new Error('connect ECONNREFUSED'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads[0].signal.aborted).toBe(false);
    reads[0].result.settle([run('a')]);
    expect(await call).toEqual([run('a')]);
    // The next idle call offers again.
    void subject.around(4, running, read);
    void subject.around(4, running, read);
    expect(made).toHaveLength(2);
  });

  it('returns a run handed while the read failed, and throws the failure only when nothing was handed', async () => {
    const { subject, made } = offers();
    const { read, reads } = reader();
    const failing = subject.around(4, running, read);
    reads[0].result.fail(new Error('Redis is down'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(made[0].withdrawn).toBe(true);
    made[0].answer.settle([run('handed')]);
    expect(await failing).toEqual([run('handed')]);
    const again = subject.around(4, running, read);
    reads[1].result.fail(new Error('Redis is down'));
    await new Promise((resolve) => setImmediate(resolve));
    made[1].answer.settle([]);
    await expect(again).rejects.toThrow('Redis is down');
  });

  it('stops offering for a while once a coordinator refuses offers (one that predates them)', async () => {
    const { subject, made } = offers();
    const { read, reads } = reader();
    const call = subject.around(4, running, read);
    made[0].answer.fail(answeredError(404, 'not_found', 'Route POST:/v1/worker/offers not found'));
    reads[0].result.settle([]);
    await call;
    void subject.around(4, running, read); // takes in the refused offer's answer
    const next = subject.around(4, running, read);
    expect(made).toHaveLength(1);
    expect(reads.at(-1)!.limit).toBe(4);
    reads.at(-1)!.result.settle([]);
    await next;
  });

  it('when the worker stops, withdraws its offer and returns what it was handed with what the read brought', async () => {
    const { subject, made } = offers();
    const { read, reads } = reader();
    const stop = new AbortController();
    const call = subject.around(4, stop.signal, read);
    stop.abort();
    await new Promise((resolve) => setImmediate(resolve));
    expect(made[0].withdrawn).toBe(true);
    made[0].answer.settle([run('handed')]);
    expect(await call).toEqual([run('handed')]);
    expect(reads[0].signal.aborted).toBe(true);
  });

  it('on close, withdraws an offer left waiting and gives back the run it was handed', async () => {
    const { subject, made, released } = offers();
    const { read, reads } = reader();
    const call = subject.around(4, running, read);
    reads[0].result.settle([run('a')]);
    await call;
    const closing = subject.close();
    made[0].answer.settle([run('handed')]);
    await closing;
    expect(released).toEqual(['handed']);
  });
});
