import { createAppLogger } from '@app/config';
import type { LoggerService, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { openApiDocument } from '@nest-durable/client';
import { type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { CoordinatorConfig } from './config/coordinator.config';
import { CoordinatorModule } from './coordinator.module';
import { useJsonBodies } from './http/json-body';

/** Builds the coordinator app (used by main.ts and by the end-to-end tests). Does not listen. */
export async function createCoordinatorApp(
  config: CoordinatorConfig,
  logger: LoggerService | LogLevel[] = createAppLogger(config.logFormat, config.logLevel),
): Promise<NestExpressApplication> {
  // abortOnError: false: the caller sees why it could not start (main.ts prints it and exits).
  const app = await NestFactory.create<NestExpressApplication>(CoordinatorModule.register(config), { bodyParser: false, logger, abortOnError: false });
  useJsonBodies(app, config.bodyLimitBytes);
  // The API description at /docs (UI) and /docs-json, unauthenticated like health and metrics: built from the
  // contract's endpoints and schemas, which the routes serve and validate with (OpenAPI 3.1, whose schemas
  // @nestjs/swagger's 3.0 types do not spell).
  SwaggerModule.setup('docs', app, openApiDocument() as unknown as OpenAPIObject);
  app.enableShutdownHooks();
  try {
    await app.init();
  } catch (error) {
    // Refused while initialising (e.g. a stream partition count the deployment disagrees with):
    // close what was opened, so no connection outlives the refusal.
    await app.close().catch(() => undefined);
    throw error;
  }
  return app;
}
