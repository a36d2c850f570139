import { createAppLogger, listenOrExit, loadConfigOrExit } from '@app/config';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { loadWorkerConfig } from './config/worker.config';
import { WorkerAppModule } from './worker-app.module';

async function main(): Promise<void> {
  const config = loadConfigOrExit('worker', () => loadWorkerConfig(process.env));
  const app = await NestFactory.create(WorkerAppModule.forRoot(config), { logger: createAppLogger(config.logFormat, config.logLevel) });
  app.enableShutdownHooks();
  await listenOrExit('worker', `${config.host}:${config.port}`, app, () => app.listen(config.port, config.host));
  new Logger('Worker').log(
    `taking work from ${config.coordinatorUrls.join(', ')} with the ${config.subscriber} subscriber; health on http://${config.host}:${config.port}`,
  );
}

void main();
