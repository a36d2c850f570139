import { describe, expect, it } from '@jest/globals';
import { CLIENT_ENDPOINTS } from './client.endpoints';
import { API } from './endpoints';
import { PUBLIC_ENDPOINTS } from './public.endpoints';
import { ROUTES } from './routes';
import { WORKER_ENDPOINTS } from './worker.endpoints';

describe('API', () => {
  const groups = { client: CLIENT_ENDPOINTS, worker: WORKER_ENDPOINTS, public: PUBLIC_ENDPOINTS };

  it('holds every entry of each group: no two groups name the same one (a spread would keep only the last)', () => {
    const names = Object.values(groups).flatMap((group) => Object.keys(group));
    expect(Object.keys(API).sort()).toEqual([...names].sort());
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(Object.entries(groups))('groups by token: each %s entry takes that audience', (audience, group) => {
    expect(new Set(Object.values(group).map((entry) => entry.audience))).toEqual(new Set([audience]));
  });

  it("takes each entry's method and path from ROUTES under the same name, and ROUTES holds no other route", () => {
    const routes = Object.fromEntries(Object.entries(API).map(([name, { method, path }]) => [name, { method, path }]));
    expect(routes).toEqual(ROUTES);
  });

  it('names each route (method and path) once', () => {
    const routes = Object.values(API).map((entry) => `${entry.method} ${entry.path}`);
    expect(new Set(routes).size).toBe(routes.length);
  });
});
