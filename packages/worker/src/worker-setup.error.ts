import { DurableError } from '@nest-durable/common';

/**
 * The worker cannot start as set up: an option out of range, no workflow to host, a workflow registered twice, a
 * `@Workflow` class Nest cannot make one singleton of. Thrown while the app starts; its message is the line to fix.
 */
export class WorkerSetupError extends DurableError {
  constructor(message: string) {
    super('worker_setup_invalid', message);
  }
}
