import { describe, expect, it } from '@jest/globals';
import { HealthIndicatorService } from '@nestjs/terminus';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoordinatorApi } from './coordinator.api';
import { CoordinatorHealth } from './coordinator.health';
import { resolveWorkerOptions } from './worker.options';

/** A stand-in coordinator answering its liveness check with `status`. */
async function coordinatorAnswering(status: number): Promise<{ server: Server; url: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status: status === 200 ? 'ok' : 'error' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const indicatorFor = (url: string) =>
  new CoordinatorHealth(new CoordinatorApi(resolveWorkerOptions({ workflows: [], coordinatorUrl: url })), new HealthIndicatorService());

describe('CoordinatorHealth', () => {
  it('is up when the coordinator answers its liveness check', async () => {
    const { server, url } = await coordinatorAnswering(200);
    try {
      expect(await indicatorFor(url).isHealthy()).toMatchObject({ coordinator: { status: 'up' } });
    } finally {
      server.close();
    }
  });

  it('is down, with the error, when no coordinator answers', async () => {
    const { server, url } = await coordinatorAnswering(200);
    await new Promise((resolve) => server.close(resolve));
    expect(await indicatorFor(url).isHealthy('coordinators')).toMatchObject({ coordinators: { status: 'down', message: expect.any(String) } });
  });
});
