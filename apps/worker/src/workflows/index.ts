import { Module } from '@nestjs/common';
import { approvalWorkflow } from './approval.workflow';
import { chainWorkflow } from './chain.workflow';
import { echoWorkflow } from './echo.workflow';
import { flakyWorkflow } from './flaky.workflow';
import { OrderFulfilment } from './order-fulfilment.service';
import { OrderProcessingWorkflow } from './order-processing.workflow';
import { parentWorkflow } from './parent.workflow';
import { probeWorkflow } from './probe.workflow';
import { sleepyWorkflow } from './sleepy.workflow';

export {
  approvalWorkflow,
  chainWorkflow,
  echoWorkflow,
  flakyWorkflow,
  OrderFulfilment,
  OrderProcessingWorkflow,
  parentWorkflow,
  probeWorkflow,
  sleepyWorkflow,
};

/**
 * The example workflows written with `defineWorkflow`, registered by default in the worker app (its `workflows`);
 * docs, demo, tests and benchmarks use them. The class ones are in ExampleWorkflowsModule.
 */
export const EXAMPLE_WORKFLOWS = [echoWorkflow, chainWorkflow, flakyWorkflow, sleepyWorkflow, approvalWorkflow, parentWorkflow, probeWorkflow];

/** The example workflows written as `@Workflow` classes, with the services they inject; the worker app imports it. */
@Module({ providers: [OrderFulfilment, OrderProcessingWorkflow] })
export class ExampleWorkflowsModule {}
