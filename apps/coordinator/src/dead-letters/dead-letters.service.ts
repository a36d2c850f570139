import {
  DeadLetterNotFoundError,
  type DeadLetterPage,
  type DeadLetterView,
  isTerminalStatus,
  type ListDeadLettersQuery,
  type RedriveResult,
  queueName,
  type StreamDeadLetterReport,
  type StreamDeadLetterResponse,
} from '@nest-durable/common';
import { RunControlRepository } from '@app/run-store';
import {
  Database,
  deleteDeadLetter,
  type DeadLetterRow,
  listDeadLetters,
  lockDeadLetter,
  lockRedrivenRun,
  recordStreamDeadLetter,
  republishRun,
} from '@app/persistence';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';

/** Seeing, redriving and deleting what dispatch gave up on; and taking in the Streams workers' reports of it. */
@Injectable()
export class DeadLettersService {
  private readonly logger = new Logger(DeadLettersService.name);

  constructor(
    private readonly db: Database,
    private readonly control: RunControlRepository,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  async list(query: ListDeadLettersQuery): Promise<DeadLetterPage> {
    const rows = await listDeadLetters(this.db, query.limit + 1, query.cursor);
    const page = rows.slice(0, query.limit);
    return { deadLetters: page.map(toView), nextCursor: rows.length > query.limit ? page[page.length - 1].id : null };
  }

  /**
   * Puts the dead letter's run back in motion, then deletes the dead letter, in one transaction: a
   * run the engine failed as `stalled` runs again as a new attempt (stall count reset); a run still
   * waiting for dispatch gets a new wake-up; a run that has finished otherwise needs nothing.
   */
  async redrive(id: string): Promise<RedriveResult> {
    return this.db.transaction(async (tx) => {
      const letter = await lockDeadLetter(tx, id);
      if (!letter) throw new DeadLetterNotFoundError(id);
      let result: RedriveResult = { action: 'none', runStatus: 'unknown' };
      if (letter.runId) {
        const run = await lockRedrivenRun(tx, letter.runId);
        if (run?.status === 'failed' && run.reason === 'stalled') {
          await this.control.retry(letter.runId, tx);
          result = { action: 'retried', runStatus: 'queued' };
        } else if (run && !isTerminalStatus(run.status) && this.config.dispatch !== 'none') {
          await republishRun(tx, letter.runId);
          result = { action: 'republished', runStatus: run.status };
        } else if (run) {
          result = { action: 'none', runStatus: run.status };
        }
      }
      await deleteDeadLetter(tx, id);
      this.logger.log('dead letter redriven', { deadLetterId: id, runId: letter.runId, action: result.action });
      return result;
    });
  }

  async delete(id: string): Promise<void> {
    if (!(await deleteDeadLetter(this.db, id))) throw new DeadLetterNotFoundError(id);
  }

  /**
   * A Streams wake-up delivered more than MAX_DELIVERIES times: recorded, and the run it last took
   * failed as `stalled` if that claim went idle (the workers that took it keep dying), so republish
   * cannot bring it back. One transaction: both or neither.
   */
  async recordStreamDeadLetter(report: StreamDeadLetterReport): Promise<StreamDeadLetterResponse> {
    const { name, version, shard } = report.workflow;
    const queue = queueName(name, version, shard);
    const outcome = await this.db.transaction(async (tx) => {
      const taken = await this.control.failStalledTakenWith(
        queue,
        report.wakeup,
        this.config.claimMinIdleTimeMs,
        `the wake-up it was taken with was delivered ${report.deliveries} times and the workers that took it stopped without finishing`,
        tx,
      );
      // The run it last took if any (a redrive acts on it), else the run it was published for.
      const deadLetterId = await recordStreamDeadLetter(tx, { ...report, queue, runId: taken?.runId ?? report.runId });
      return { deadLetterId, runFailed: taken?.failed ?? false };
    });
    this.logger.warn('a Streams wake-up was delivered too often; dead-lettered', { queue, wakeup: report.wakeup, ...outcome });
    return outcome;
  }
}

function toView(row: DeadLetterRow): DeadLetterView {
  return { ...row, createdAt: row.createdAt.toISOString() };
}
