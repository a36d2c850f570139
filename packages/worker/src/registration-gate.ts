import { Injectable } from '@nestjs/common';
import { WorkflowRegistry } from './workflow.registry';

/**
 * Holds the worker's first read of work back until its first registration has committed, when a
 * workflow it hosts declares limits in code: the coordinators enforce a limit only once they know it,
 * and runs taken before that would run outside it. A worker whose workflows declare none starts at once
 * (its registration is never on a run's path).
 */
@Injectable()
export class RegistrationGate {
  private open!: () => void;
  /** Resolves once work may be taken. */
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  /** Whether the worker waits for its first registration (some workflow declares limits). */
  readonly waits: boolean;

  constructor(registry: WorkflowRegistry) {
    this.waits = registry.refs().some(({ name, version }) => registry.get(name, version)?.limits !== undefined);
    if (!this.waits) this.open();
  }

  /** A registration committed: the coordinators know the declared limits. */
  registered(): void {
    this.open();
  }
}
