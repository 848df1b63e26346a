// Test runner configuration (`npm test`, Node and npm only): unit tests run without a database; e2e tests share one embedded PostgreSQL.
import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Suites driving programs npm cannot install run under `npm run test:clients` (vitest.clients.config.ts).
    exclude: [...configDefaults.exclude, 'test/clients/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
  },
});
