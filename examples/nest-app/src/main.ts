import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { WorkerModule } from './worker.module';

/** Starts the worker; SIGTERM lets running runs finish (or hands them back) before it exits. */
async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerModule);
  app.enableShutdownHooks();
  await app.init();
  new Logger('Example').log('worker ready');
}

void main();
