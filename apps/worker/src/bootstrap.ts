import { createAppLogger, httpAdapter } from '@app/config';
import type { LoggerService, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { WorkerConfig } from './config/worker.config';
import { WorkerAppModule } from './worker-app.module';

/** Builds the worker app (used by main.ts and by the end-to-end tests); its health and metrics are served once it listens. */
export function createWorkerApp(
  config: WorkerConfig,
  logger: LoggerService | LogLevel[] = createAppLogger(config.logFormat, config.logLevel),
): Promise<NestFastifyApplication> {
  return NestFactory.create<NestFastifyApplication>(WorkerAppModule.forRoot(config), httpAdapter(), { logger });
}
