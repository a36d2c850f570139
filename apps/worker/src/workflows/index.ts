import { approvalWorkflow } from './approval.workflow';
import { chainWorkflow } from './chain.workflow';
import { echoWorkflow } from './echo.workflow';
import { flakyWorkflow } from './flaky.workflow';
import { orderProcessingWorkflow } from './order-processing.workflow';
import { parentWorkflow } from './parent.workflow';
import { probeWorkflow } from './probe.workflow';
import { sleepyWorkflow } from './sleepy.workflow';

export { approvalWorkflow, chainWorkflow, echoWorkflow, flakyWorkflow, orderProcessingWorkflow, parentWorkflow, probeWorkflow, sleepyWorkflow };

/** Registered by default in the worker app; docs, demo, tests and benchmarks use them. */
export const EXAMPLE_WORKFLOWS = [
  echoWorkflow,
  orderProcessingWorkflow,
  chainWorkflow,
  flakyWorkflow,
  sleepyWorkflow,
  approvalWorkflow,
  parentWorkflow,
  probeWorkflow,
];
