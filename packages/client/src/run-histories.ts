import { decode, InvalidRequestError, LIST_LIMIT_MAX, RecordedHistory, RunNotFoundError, type RunStatus } from '@nest-durable/common';
import type { WorkflowClient } from './workflow.client';

/** Which runs' histories to read: one workflow version's, newest first (status by status, when given several). */
export interface HistoryFilter {
  workflow: string;
  version: string;
  /**
   * Only runs in this status, or these (say `['queued', 'running', 'waiting']`: the runs in flight, the ones a
   * deploy resumes, however old). Default: every status.
   */
  status?: RunStatus | readonly RunStatus[];
  /** At most this many runs. Default: all of them. */
  limit?: number;
}

/**
 * The recorded histories of a workflow version's runs, read through the client API: the runs' list (GET /v1/runs,
 * page by page), then each run with its steps (GET /v1/runs/:id). A run gone meanwhile (retention) is skipped.
 */
export async function* fetchHistories(client: WorkflowClient, filter: HistoryFilter): AsyncGenerator<RecordedHistory> {
  const statuses = filter.status === undefined ? [undefined] : typeof filter.status === 'string' ? [filter.status] : [...new Set(filter.status)];
  let left = filter.limit ?? Number.POSITIVE_INFINITY;
  for (const status of statuses) {
    let cursor: string | undefined;
    while (left > 0) {
      const page = await client.list({ workflow: filter.workflow, version: filter.version, status, limit: Math.min(LIST_LIMIT_MAX, left), cursor });
      for (const listed of page.runs) {
        const found = await client.get(listed.id).catch((error: unknown) => {
          if (error instanceof RunNotFoundError) return undefined;
          throw error;
        });
        if (!found) continue;
        const { tasks, ...run } = found;
        yield { run, steps: tasks ?? [] };
        left--;
      }
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
  }
}

/** One history as a line of `wf runs export` (JSON, then a newline). */
export function historyLine(history: RecordedHistory): string {
  return `${JSON.stringify(history)}\n`;
}

/** The histories of an export's text (JSON lines; blank lines skipped); a line that is not one throws, naming it. */
export function parseHistories(text: string): RecordedHistory[] {
  const histories: RecordedHistory[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    try {
      histories.push(decode(RecordedHistory, JSON.parse(line), 'history'));
    } catch (error) {
      throw new InvalidRequestError('invalid_history', `line ${index + 1} is not a recorded history ({run, steps}): ${(error as Error).message}`);
    }
  }
  return histories;
}
