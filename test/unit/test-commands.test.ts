// `npm test` needs Node and npm only: no suite it runs drives psql, pg_dump, python3, java or openssl; `npm run test:clients` names what is missing.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { missingTools, missingToolsMessage, REQUIRED_TOOLS } from '../clients/required-tools.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Every file under `dir` (relative to the repository root), recursively. */
function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

describe('npm test', () => {
  test('excludes test/clients', async () => {
    const { default: config } = await import('../../vitest.config.js');
    expect(config.test?.exclude).toContain('test/clients/**');
    const { default: clients } = await import('../../vitest.clients.config.js');
    expect(clients.test?.include).toEqual(['test/clients/**/*.test.ts']);
  });

  test('no suite outside test/clients runs a program npm cannot install', () => {
    const offenders: string[] = [];
    const program =
      /\b(?:spawn|spawnSync|execFile|execFileSync|run|requireTool)\(\s*['"`](psql|pg_dump|pg_restore|pgbench|python3?|\/usr\/bin\/python3|java|openssl|haproxy|chromium)['"`]/;
    for (const file of filesUnder('test')) {
      if (!file.endsWith('.test.ts') || file.startsWith(`test${path.sep}clients${path.sep}`)) continue;
      if (file === path.relative(ROOT, import.meta.filename)) continue;
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      if (program.test(text) || text.includes("helpers/psql.js'")) offenders.push(file);
    }
    expect(offenders).toEqual([]);
  });
});

describe('npm run test:clients', () => {
  test('fails naming each missing tool and the apt-get line that installs them', () => {
    const missing = missingTools([
      { what: 'a tool that is not there', check: ['pgwarden-no-such-program'], debianPackage: 'pkg-a' },
      {
        what: 'a file that is not there',
        check: { readable: '/nonexistent/pgwarden.jar' },
        debianPackage: 'pkg-b',
      },
      { what: 'node itself', check: [process.execPath, '--version'], debianPackage: 'nodejs' },
    ]);
    expect(missing.map((m) => m.tool.what)).toEqual(['a tool that is not there', 'a file that is not there']);
    const message = missingToolsMessage(missing) ?? '';
    expect(message).toContain(
      'a tool that is not there: `pgwarden-no-such-program` failed (spawnSync pgwarden-no-such-program ENOENT)',
    );
    expect(message).toContain('a file that is not there: reading /nonexistent/pgwarden.jar failed (ENOENT');
    expect(message).toContain('Install them with: apt-get install -y pkg-a pkg-b');
    expect(missingToolsMessage([])).toBeUndefined();
  });

  test('.ci/run installs the Debian package of every required tool, then runs both commands', () => {
    const ci = fs.readFileSync(path.join(ROOT, '.ci/run'), 'utf8');
    const apt = ci.split('\n').find((l) => l.includes('apt-get install')) ?? '';
    for (const t of REQUIRED_TOOLS) {
      for (const pkg of t.debianPackage.split(' ')) expect(apt.split(/\s+/), t.what).toContain(pkg);
    }
    const order = ['npm run lint', 'npm test', 'npm run test:clients'].map((c) => ci.indexOf(`\n${c}\n`));
    expect(order.every((i) => i > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  });
});
