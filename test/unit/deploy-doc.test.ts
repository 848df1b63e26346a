// docs/deploy.md shows the HAProxy configuration the fleet test runs: the same text, for the guide's three addresses.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { haproxyConfig } from '../helpers/haproxy.js';

const DOC = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/deploy.md'), 'utf8');

describe('docs/deploy.md', () => {
  test('its HAProxy block is what test/helpers/haproxy.ts gives the fleet test', () => {
    const block = /```haproxy\n([\s\S]*?)```/.exec(DOC)?.[1];
    expect(block).toBe(
      haproxyConfig({
        bind: '0.0.0.0:6432',
        servers: [1, 2, 3].map((i) => ({
          name: `pgwarden${i}`,
          host: `10.0.0.${10 + i}`,
          port: 6432,
          adminPort: 8080,
        })),
      }),
    );
  });
});
