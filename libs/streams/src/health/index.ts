// Redis's health indicator, behind an entry of its own (`@app/streams/health`): it loads no Redis client, so an app
// that checks for a RedisModule (the worker's operations module) can name it without ioredis installed.
export * from './redis.health';
