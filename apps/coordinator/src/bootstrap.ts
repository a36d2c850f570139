import { NestFactory } from '@nestjs/core';
import type { LogLevel } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { CoordinatorConfig } from './config/coordinator.config';
import { CoordinatorModule } from './coordinator.module';

/** Builds the coordinator app (used by main.ts and by the end-to-end tests). Does not listen. */
export async function createCoordinatorApp(
  config: CoordinatorConfig,
  logger: LogLevel[] = ['error', 'warn', 'log'],
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(CoordinatorModule.register(config), {
    bodyParser: false,
    logger,
  });
  app.useBodyParser('json', { limit: config.bodyLimitBytes });
  app.enableShutdownHooks();
  return app;
}
