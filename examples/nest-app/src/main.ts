import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { WorkerModule } from './worker.module';

/**
 * Starts the worker, serving its health and metrics on PORT (default 3001); SIGTERM lets running runs finish
 * (or hands them back) before it exits.
 */
async function main(): Promise<void> {
  // Fastify, as the engine's own apps; WorkerOperationsModule serves its routes on Express as well.
  const app = await NestFactory.create<NestFastifyApplication>(WorkerModule, new FastifyAdapter());
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3001);
  await app.listen(port, '0.0.0.0');
  new Logger('Example').log(`worker ready; health and metrics on port ${port}`);
}

void main();
