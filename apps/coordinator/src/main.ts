import { exitOnStartError, listenOrExit, loadConfigOrExit, optimiseHotCodeSooner } from '@app/config';
import { describeDatabase } from '@app/persistence';
import { Logger } from '@nestjs/common';
import { createCoordinatorApp, listenCoordinator } from './bootstrap';
import { loadCoordinatorConfig } from './config/coordinator.config';

async function main(): Promise<void> {
  optimiseHotCodeSooner();
  const config = loadConfigOrExit('coordinator', () => loadCoordinatorConfig(process.env));
  // A configuration the deployment refuses (e.g. a stream partition count other coordinators disagree with), or a
  // database it cannot use (no such database, a wrong password; one not up yet is waited for): one line.
  const app = await createCoordinatorApp(config).catch((error: unknown) => exitOnStartError('coordinator', error));
  await listenOrExit('coordinator', `${config.host}:${config.port}`, app, () => listenCoordinator(app, config.port, config.host));
  new Logger('Coordinator').log(
    `listening on http://${config.host}:${config.port} (database ${describeDatabase(config.database)}, dispatch ${config.dispatch})`,
  );
  if (config.authDisabled) new Logger('Coordinator').warn('authentication is disabled (AUTH_DISABLED=true): do not expose this coordinator');
}

void main();
