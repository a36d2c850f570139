export interface DurableErrorOptions {
  /** Trying again cannot help (see WorkflowErrorOptions.nonRetryable for what it does in a workflow). Default false. */
  nonRetryable?: boolean;
  cause?: unknown;
}

/**
 * The one root of every error nest-durable defines, in every package and app (like Temporal's TemporalFailure):
 * the coordinator's refusals, the workflow errors and your own WorkflowErrors, the client's and the CLI's, the
 * configuration's. A subclass is named after itself.
 *
 * `reason` is the stable, machine-readable part (`run_not_found`, `revision_conflict`, `invalid_<field>`, …): the
 * coordinator chooses an answer's HTTP status from it, and a client rebuilds the class it names from an answer (see
 * rebuildError). `nonRetryable` says that trying again cannot help. An error carries no HTTP status of its own: one
 * a client rebuilt from an answer also holds the answer's `statusCode` (see @nest-durable/client's AnsweredError).
 *
 * Plain TypeScript without imports: the dashboard's browser bundle takes this file as it is.
 */
export class DurableError extends Error {
  readonly nonRetryable: boolean;

  constructor(
    readonly reason: string,
    message: string,
    options: DurableErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.nonRetryable = options.nonRetryable ?? false;
  }
}
