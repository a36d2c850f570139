import { API, type EndpointInput, type WorkflowList, type WorkflowView } from '@nest-durable/common';
import { Controller } from '@nestjs/common';
import { Input, Route } from '../http/route.decorators';
import { WorkflowsService } from './workflows.service';

/** The client API over workflow versions: list them, pause and resume them, set their limits. */
@Controller()
export class WorkflowsController {
  constructor(private readonly workflows: WorkflowsService) {}

  @Route(API.listWorkflows)
  list(): Promise<WorkflowList> {
    return this.workflows.list();
  }

  @Route(API.pauseWorkflow)
  pause(@Input() { params, body }: EndpointInput<typeof API.pauseWorkflow>): Promise<WorkflowView> {
    return this.workflows.pause(params.name, params.version, body);
  }

  @Route(API.resumeWorkflow)
  resume(@Input() { params, body }: EndpointInput<typeof API.resumeWorkflow>): Promise<WorkflowView> {
    return this.workflows.resume(params.name, params.version, body);
  }

  @Route(API.setWorkflowLimits)
  setLimits(@Input() { params, body }: EndpointInput<typeof API.setWorkflowLimits>): Promise<WorkflowView> {
    return this.workflows.setLimits(params.name, params.version, body);
  }

  @Route(API.clearWorkflowLimits)
  clearLimits(@Input() { params }: EndpointInput<typeof API.clearWorkflowLimits>): Promise<WorkflowView> {
    return this.workflows.clearLimits(params.name, params.version);
  }
}
