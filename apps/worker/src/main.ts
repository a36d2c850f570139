import { ConfigError, createAppLogger } from '@app/config';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { loadWorkerConfig, type WorkerConfig } from './config/worker.config';
import { WorkerAppModule } from './worker-app.module';

async function main(): Promise<void> {
  let config: WorkerConfig;
  try {
    config = loadWorkerConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`worker: invalid configuration: ${error.message}`);
    process.exit(78);
  }
  const app = await NestFactory.create(WorkerAppModule.register(config), { logger: createAppLogger(config.logFormat, config.logLevel) });
  app.enableShutdownHooks();
  await app.listen(config.port, '0.0.0.0');
  new Logger('Worker').log(`taking work from ${config.coordinatorUrl} with the ${config.subscriber} subscriber; health on :${config.port}`);
}

void main();
