import {
  type CompleteRequest,
  CompletionTokenExpiredError,
  CompletionTokenNotFoundError,
  CompletionTokenUsedError,
  type JsonValue,
  isTerminalStatus,
} from '@nest-durable/common';
import { completeToken, Database, findTokenRun, lockRunStatus, tokenState } from '@app/persistence';
import { Injectable } from '@nestjs/common';

/**
 * Completions of tokens by outside systems (`POST /v1/completions/{token}`). One transaction: the token's run is
 * locked first (as every client command on a run), then the token's state is read and changed, so a completion
 * and the run's wait on the token (StepRepository.suspend, under the same lock) see each other.
 */
@Injectable()
export class CompletionRepository {
  constructor(private readonly db: Database) {}

  /**
   * Completes or fails the token's step: delivered to the run if it waits on it (the run becomes due now), kept
   * for its wait otherwise. Refused, changing nothing: no such token (404), used already (409), expired or its
   * run ended (410).
   */
  async complete(token: string, request: CompleteRequest): Promise<{ delivered: boolean }> {
    return this.db.transaction(async (tx) => {
      const runId = await findTokenRun(tx, token);
      if (!runId) throw new CompletionTokenNotFoundError();
      const status = await lockRunStatus(tx, runId);
      // Deleted (retention) between the two reads: gone with its tokens.
      if (!status) throw new CompletionTokenNotFoundError();
      const state = await tokenState(tx, token);
      if (!state) throw new CompletionTokenNotFoundError();
      if (state.used) throw new CompletionTokenUsedError(runId);
      if (state.expired || state.waitResolved) throw new CompletionTokenExpiredError(runId, 'it timed out');
      if (isTerminalStatus(status)) throw new CompletionTokenExpiredError(runId, `the run is ${status}`);
      return { delivered: await completeToken(tx, token, outcomeOf(request)) };
    });
  }
}

/** What the waiting step resolves with: `{status: 'completed', data}` or `{status: 'failed', error}`. */
function outcomeOf(request: CompleteRequest): JsonValue {
  if (request.error === undefined) return { status: 'completed', data: request.data ?? null };
  const { name = 'Error', message, data = null } = request.error;
  return { status: 'failed', error: { name, message, data } };
}
