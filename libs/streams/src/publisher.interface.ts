import type { DispatchMessage } from './dispatch-message';

export const PUBLISHER = Symbol('PUBLISHER');

/**
 * Coordinator side of a transport: pushes ready-run messages from the outbox. `publish` resolves
 * with one entry per message, `undefined` when sent or the error that kept it from being sent, so
 * the outbox can retry exactly the failed ones.
 */
export interface Publisher {
  readonly name: string;
  publish(messages: DispatchMessage[]): Promise<(Error | undefined)[]>;
}
