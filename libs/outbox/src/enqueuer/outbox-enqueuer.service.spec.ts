import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { Publisher } from '@app/streams';
import type { NotificationListener } from '../notifications/notification-listener.service';
import { OutboxEnqueuer } from './outbox-enqueuer.service';
import { DEFAULT_OUTBOX_OPTIONS } from './outbox.constants';
import type { OutboxRepository, OutboxRow } from './outbox.repository';

/**
 * An enqueuer whose publisher fails every message and whose repository records the retries it schedules:
 * the delays it picks are what is under test (the database and Redis play no part in them).
 */
function failingEnqueuer() {
  const retries: { id: string; delayMs: number }[] = [];
  const repository = {
    removeSent: async () => undefined,
    scheduleRetries: async (rows: { id: string; delayMs: number }[]) => void retries.push(...rows.map(({ id, delayMs }) => ({ id, delayMs }))),
    deadLetter: async () => undefined,
  };
  const publisher = { name: 'down', publish: async (messages: unknown[]) => messages.map(() => new Error('Connection is closed.')) };
  const options = { ...DEFAULT_OUTBOX_OPTIONS, retryBaseMs: 100, retryMaxMs: 1_000, maxRetries: 100 };
  const enqueuer = new OutboxEnqueuer(repository as unknown as OutboxRepository, publisher as unknown as Publisher, {} as NotificationListener, options);
  return { enqueuer, retries };
}

/** Rows that failed their n-th publish attempt, for each n given (attemptCount counts the attempt just made). */
const rowsAt = (attempts: number[]): OutboxRow[] =>
  attempts.map((attemptCount, i) => ({ id: String(i + 1), runId: `run-${i + 1}`, queue: 'echo:1', attemptCount }));

describe('OutboxEnqueuer publish retries', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('caps the wait of each further attempt at twice the last (100, 200, 400, 800 ms), up to retryMaxMs (1 s)', async () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.999_999); // the top of each draw: the cap itself
    const { enqueuer, retries } = failingEnqueuer();
    await enqueuer.publishTaken(rowsAt([1, 2, 3, 4, 5, 9]));
    expect(retries.map((retry) => retry.delayMs)).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('draws each wait at random below its cap (full jitter), so rows that failed together retry apart', async () => {
    const draws = [0, 0.25, 0.5, 0.75];
    jest.spyOn(Math, 'random').mockImplementation(() => draws.shift() ?? 0);
    const { enqueuer, retries } = failingEnqueuer();
    await enqueuer.publishTaken(rowsAt([3, 3, 3, 3]));
    expect(retries.map((retry) => retry.delayMs)).toEqual([0, 100, 200, 300]);
  });
});
