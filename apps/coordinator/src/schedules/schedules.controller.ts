import { API, type EndpointInput, type SchedulePage, type ScheduleView, type TriggeredSchedule } from '@nest-durable/common';
import { Controller } from '@nestjs/common';
import { Input, Route } from '../http/route.decorators';
import { SchedulesService } from './schedules.service';

/** The client API over schedules: create, list, get, delete, pause, resume, trigger. */
@Controller()
export class SchedulesController {
  constructor(private readonly schedules: SchedulesService) {}

  @Route(API.createSchedule)
  create(@Input() { body }: EndpointInput<typeof API.createSchedule>): Promise<ScheduleView> {
    return this.schedules.create(body);
  }

  @Route(API.listSchedules)
  list(@Input() { query }: EndpointInput<typeof API.listSchedules>): Promise<SchedulePage> {
    return this.schedules.list(query);
  }

  @Route(API.getSchedule)
  get(@Input() { params }: EndpointInput<typeof API.getSchedule>): Promise<ScheduleView> {
    return this.schedules.get(params.id);
  }

  @Route(API.deleteSchedule)
  async delete(@Input() { params }: EndpointInput<typeof API.deleteSchedule>): Promise<void> {
    await this.schedules.delete(params.id);
  }

  @Route(API.pauseSchedule)
  pause(@Input() { params }: EndpointInput<typeof API.pauseSchedule>): Promise<ScheduleView> {
    return this.schedules.pause(params.id);
  }

  @Route(API.resumeSchedule)
  resume(@Input() { params }: EndpointInput<typeof API.resumeSchedule>): Promise<ScheduleView> {
    return this.schedules.resume(params.id);
  }

  @Route(API.triggerSchedule)
  trigger(@Input() { params }: EndpointInput<typeof API.triggerSchedule>): Promise<TriggeredSchedule> {
    return this.schedules.trigger(params.id);
  }
}
