import { Module } from '@nestjs/common';
import { RetentionDaemon } from './retention.daemon';
import { RetentionMetrics } from './retention.metrics';
import { RetentionRepository } from './retention.repository';

/** Deleting what has been kept long enough, on the coordinator that leads `retention`. */
@Module({ providers: [RetentionDaemon, RetentionMetrics, RetentionRepository] })
export class RetentionModule {}
