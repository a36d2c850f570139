import { randomUUID } from 'node:crypto';

/**
 * Once per `jest` run, before any suite: an id for the run, inherited by every worker process, so that what only
 * one suite of the run may do (building the published packages, test/support/packages.ts) is done once whichever
 * suite asks first.
 */
export default function globalSetup(): void {
  process.env.WF_TEST_RUN_ID ??= randomUUID();
}
