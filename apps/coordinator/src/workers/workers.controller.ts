import { API, type EndpointInput, type WorkerList } from '@nest-durable/common';
import { Controller } from '@nestjs/common';
import { Input, Route } from '../http/route.decorators';
import { WorkersService } from './workers.service';

/** The worker registry: workers register themselves (worker protocol); clients list them. */
@Controller()
export class WorkersController {
  constructor(private readonly workers: WorkersService) {}

  @Route(API.registerWorker)
  async register(@Input() { params, body }: EndpointInput<typeof API.registerWorker>): Promise<void> {
    await this.workers.register(params.workerId, body);
  }

  @Route(API.listWorkers)
  list(): Promise<WorkerList> {
    return this.workers.list();
  }
}
