import { Module } from '@nestjs/common';
import { RunWeeksDaemon } from './run-weeks.daemon';
import { RunWeeksMetrics } from './run-weeks.metrics';
import { RunWeeksRepository } from './run-weeks.repository';

/** The run tables' weekly partitions, made ahead by the coordinator that leads `run-weeks`. */
@Module({ providers: [RunWeeksDaemon, RunWeeksMetrics, RunWeeksRepository] })
export class RunWeeksModule {}
