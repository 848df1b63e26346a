// `npm run test:clients`: the suites that drive programs npm cannot install (psql, pg_dump, psycopg 3, pgjdbc, openssl); fails when one is missing.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

export default defineConfig({
  test: {
    ...base.test,
    include: ['test/clients/**/*.test.ts'],
    exclude: [],
    globalSetup: ['test/clients/required-tools.ts', 'test/global-setup.ts'],
  },
});
