import { BULK_COUNT_MAX, type BulkRunsRequest, type BulkRunsResult, InvalidRequestError, type RunFilter, type RunStatus } from '@nest-durable/common';
import { type ControlOutcome, RunControlRepository } from '@app/run-store';
import { uuidv7Floor } from '@app/persistence';
import { Injectable } from '@nestjs/common';
import { RunLifecycle } from '../hand-off/run-lifecycle.service';
import { RunsRepository } from './runs.repository';

/** A bulk action: the statuses it applies to, and the single-run command it runs on each. */
interface BulkAction {
  statuses: RunStatus[];
  apply: (id: string) => Promise<ControlOutcome>;
}

/**
 * Cancels or retries every run a filter matches (the runs list's), a page at a time. A request reads up to `limit`
 * matching ids (newest first, below `before`) and runs on each the command a single cancel or retry runs, in a
 * transaction of its own: each run is locked and its status judged again there, so a run another request changed
 * first is skipped, and the fencing is exactly a single command's (a cancel bumps the revision its worker holds).
 * A request's work is bounded by `limit` (1,000 at most); 100,000 matching runs are 100 requests or more, each
 * committing its runs as it goes, that the caller (the dashboard, `wf`) makes one after the other with the
 * `before` each answers. A dry run counts (up to BULK_COUNT_MAX) and answers the `before` bound that leaves out
 * runs created after the count, which the confirmation did not count.
 */
@Injectable()
export class BulkRunsService {
  private readonly actions: Record<'cancel' | 'retry', BulkAction>;

  constructor(
    private readonly repository: RunsRepository,
    control: RunControlRepository,
    lifecycle: RunLifecycle,
  ) {
    this.actions = {
      cancel: {
        statuses: ['queued', 'running', 'waiting'],
        apply: async (id) => {
          const outcome = await control.cancel(id);
          if (outcome.applied) lifecycle.cancelled();
          return outcome;
        },
      },
      retry: { statuses: ['failed'], apply: (id) => control.retry(id) },
    };
  }

  async act(kind: 'cancel' | 'retry', request: BulkRunsRequest): Promise<BulkRunsResult> {
    const action = this.actions[kind];
    const filter = checked(request.filter);
    if (filter.tag === null) return { matched: 0, capped: false, acted: 0, before: request.dryRun ? boundNow() : null }; // a key asked with two values
    const values = { ...filter, cursor: request.before };
    if (request.dryRun) {
      const matched = await this.repository.countMatching(values, action.statuses, BULK_COUNT_MAX + 1);
      return { matched: Math.min(matched, BULK_COUNT_MAX), capped: matched > BULK_COUNT_MAX, acted: 0, before: request.before ?? boundNow() };
    }
    const ids = await this.repository.matchingIds(values, action.statuses, request.limit);
    let acted = 0;
    // One after the other: each is a short transaction, and a page of them must not take the whole pool.
    for (const id of ids) if ((await action.apply(id)).applied) acted++;
    return { matched: ids.length, capped: false, acted, before: ids.length === request.limit ? ids[ids.length - 1] : null };
  }
}

/** The filter as the list checks it: an idempotency key is searched with its workflow. */
function checked(filter: RunFilter): RunFilter {
  if (filter.idempotencyKey !== undefined && filter.workflow === undefined) {
    throw new InvalidRequestError('invalid_idempotencyKey', 'an idempotency key is unique per workflow: filter by it with `workflow` too');
  }
  return filter;
}

/** Above the id of every run created until now (UUIDv7 ids are time-ordered): runs created later stay out. */
function boundNow(): string {
  return uuidv7Floor(Date.now() + 1);
}
