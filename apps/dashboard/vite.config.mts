import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The dashboard: a static bundle served by the coordinator at /ui (apps/coordinator/src/dashboard).
// `npm run build` writes it to dist/dashboard; `npx vite apps/dashboard` serves it for development,
// forwarding the API to a coordinator on :3000.
const coordinator = process.env.COORDINATOR_URL ?? 'http://127.0.0.1:3000';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  // Preact's automatic JSX runtime, compiled by Vite's own transformer (no Babel plugin needed).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: {
    // The contract's run statuses and routes and the errors' root, plain modules (the package's other values bring
    // TypeBox, which the browser does not need: the endpoint entries with their schemas would add about 75 kB gzipped).
    alias: {
      '@nest-durable/common/run-status': fileURLToPath(new URL('../../packages/common/src/contract/run-status.ts', import.meta.url)),
      '@nest-durable/common/routes': fileURLToPath(new URL('../../packages/common/src/contract/routes.ts', import.meta.url)),
      '@nest-durable/common/durable-error': fileURLToPath(new URL('../../packages/common/src/errors/durable.error.ts', import.meta.url)),
    },
  },
  build: {
    outDir: fileURLToPath(new URL('../../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 200,
  },
  server: { proxy: { '/v1': coordinator, '/ui/config.json': coordinator } },
});
