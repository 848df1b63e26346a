// Test runner configuration (`npm test`, Node and npm only): unit tests run without a database; e2e tests share one embedded PostgreSQL.
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Suites driving programs npm cannot install run under `npm run test:clients` (vitest.clients.config.ts).
    exclude: [...configDefaults.exclude, 'test/clients/**'],
    globalSetup: ['test/global-setup.ts'],
    // Generous: CI's npm test runs for ~10 minutes on 2 shared cores, and a test that starts child
    // processes (each a Node start of seconds under load) must not fail for the machine's slowness.
    testTimeout: 120_000,
    hookTimeout: 240_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
