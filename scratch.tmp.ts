import { RedisCluster } from './test/support/redis-cluster';
import { RedisConnection } from './libs/worker/src/redis/redis.connection';
import { hashSlot, sortedSetKey } from './libs/client/src';
async function main() {
  for (let round = 0; round < 4; round++) {
  const c = new RedisCluster();
  await c.start();
  const conn = new RedisConnection({ clusterNodes: c.seedNodes, prefix: 'x:' });
  await conn.whenReady(conn.client);
  const key = sortedSetKey('x:', 'echo:1');
  let stop = false; const stuck: number[] = []; let calls = 0; let errors = 0;
  const loop = (async () => {
    while (!stop) {
      const t = Date.now(); calls++;
      const p = conn.pipelineBySlot([1, 2, 3, 4, 5], () => key, (pl, i) => pl.zadd(key, Date.now(), `m${calls}-${i}`));
      const timer = setTimeout(() => { stuck.push(calls); console.log('STUCK call', calls, 'since', new Date(t).toISOString()); }, 8000);
      const r = await p; clearTimeout(timer);
      if (r.some(([e]) => e)) errors++;
      await new Promise((res) => setTimeout(res, 20));
    }
  })();
  await new Promise((r) => setTimeout(r, 500));
  const t0 = Date.now();
  await c.killMasterOf(hashSlot(key));
  console.log('round', round, 'failover ms', Date.now() - t0);
  await new Promise((r) => setTimeout(r, 12000));
  stop = true;
  await Promise.race([loop, new Promise((r) => setTimeout(r, 2000))]);
  console.log('round', round, 'calls', calls, 'errors', errors, 'stuck', stuck.length);
  conn.client.disconnect();
  await c.stop();
  }
  process.exit(0);
}
main().catch((e) => { console.error('FAIL', e); process.exit(1); });
