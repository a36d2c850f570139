import { createAppLogger, httpAdapter } from '@app/config';
import type { LoggerService, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { openApiDocument } from '@nest-durable/common';
import { type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { CoordinatorConfig } from './config/coordinator.config';
import { CoordinatorModule } from './coordinator.module';
import { answerClientError, answerFrameworkError } from './http/engine-exception.filter';
import { useJsonBodies } from './http/json-body';

/**
 * How many connections the kernel may hold for the coordinator before it accepts them (Node's default is 511;
 * Linux caps it at net.core.somaxconn, 4096 by default). Every long poll — a worker's claim, a client's wait for a
 * result — holds a connection of its own, and they open together: a fleet of workers reconnecting after a
 * restart, a client awaiting 1,000 results at once. One dropped from a full queue waits a second for its SYN to be
 * sent again, and on a busy host the kernel may give up on it and answer its request with a reset.
 */
const LISTEN_BACKLOG = 4_096;

/** Serves the app on `port` and `host` (main.ts, and the end-to-end tests with port 0). */
export function listenCoordinator(app: NestFastifyApplication, port: number, host: string): Promise<unknown> {
  return app.listen({ port, host, backlog: LISTEN_BACKLOG });
}

/** Builds the coordinator app (used by main.ts and by the end-to-end tests). Does not listen. */
export async function createCoordinatorApp(
  config: CoordinatorConfig,
  logger: LoggerService | LogLevel[] = createAppLogger(config.logFormat, config.logLevel),
): Promise<NestFastifyApplication> {
  // Keep-alive requests during shutdown are answered with `Connection: close` (HttpDrain); a path that is not UTF-8,
  // and what Node's HTTP parser refuses (a URL over 16 KiB), are refused with the API's error body. abortOnError: false: the caller sees why it could not start (main.ts
  // prints it and exits).
  const app = await NestFactory.create<NestFastifyApplication>(CoordinatorModule.forRoot(config), httpAdapter(answerFrameworkError, answerClientError), {
    bodyParser: false,
    logger,
    abortOnError: false,
  });
  useJsonBodies(app.getHttpAdapter().getInstance(), config.bodyLimitBytes);
  // The API description at /docs (UI) and /docs-json, unauthenticated like health and metrics: built from the
  // contract's endpoints and schemas, which the routes serve and validate with (OpenAPI 3.1, whose schemas
  // @nestjs/swagger's 3.0 types do not spell).
  SwaggerModule.setup('docs', app, openApiDocument() as unknown as OpenAPIObject);
  app.enableShutdownHooks();
  try {
    await app.init();
    // Fastify loads its plugins and routes when ready: before anything is served (tests serve the app without listening).
    await app.getHttpAdapter().getInstance().ready();
  } catch (error) {
    // Refused while initialising (e.g. a stream partition count the deployment disagrees with):
    // close what was opened, so no connection outlives the refusal.
    await app.close().catch(() => undefined);
    throw error;
  }
  return app;
}
