import { chainWorkflow } from './chain.workflow';
import { echoWorkflow } from './echo.workflow';
import { flakyWorkflow } from './flaky.workflow';
import { orderProcessingWorkflow } from './order-processing.workflow';

export { chainWorkflow, echoWorkflow, flakyWorkflow, orderProcessingWorkflow };

/** Registered by default in the worker app; docs, demo, tests and benchmarks use them. */
export const EXAMPLE_WORKFLOWS = [echoWorkflow, orderProcessingWorkflow, chainWorkflow, flakyWorkflow];
