import { listenOrExit, loadConfigOrExit, optimiseHotCodeSooner } from '@app/config';
import { Logger } from '@nestjs/common';
import { createWorkerApp } from './bootstrap';
import { loadWorkerConfig } from './config/worker.config';

async function main(): Promise<void> {
  optimiseHotCodeSooner();
  const config = loadConfigOrExit('worker', () => loadWorkerConfig(process.env));
  const app = await createWorkerApp(config);
  app.enableShutdownHooks();
  await listenOrExit('worker', `${config.host}:${config.port}`, app, () => app.listen(config.port, config.host));
  new Logger('Worker').log(
    `taking work from ${config.coordinatorUrls.join(', ')} with the ${config.subscriber} subscriber; health on http://${config.host}:${config.port}`,
  );
}

void main();
