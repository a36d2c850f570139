import { ConfigError } from '@app/config';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { loadWorkerConfig } from './config/worker.config';
import { WorkerAppModule } from './worker-app.module';

async function main(): Promise<void> {
  let config;
  try {
    config = loadWorkerConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`worker: invalid configuration: ${error.message}`);
    process.exit(78);
  }
  const app = await NestFactory.createApplicationContext(WorkerAppModule.register(config), {
    logger: ['error', 'warn', 'log'],
  });
  app.enableShutdownHooks();
  new Logger('Worker').log(`taking work from ${config.coordinatorUrl}`);
}

void main();
