// One suite per ORM or migration tool: introspection and a migration compared with a direct run, and a restricted user's masks.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type OrmFixture, ormFixture, type ToolScenario } from './orm-fixture.js';

/**
 * Declares the suite of `tool` (its name and exact version in the title) on its own fixture
 * database `database`: introspection and migration through pgwarden as dba equal a direct run
 * (same results, same state after), and alice's queries are masked where expected.
 */
export function describeTool(tool: string, database: string, scenario: ToolScenario): void {
  let fx: OrmFixture;
  describe(tool, () => {
    beforeAll(async () => {
      fx = await ormFixture(database);
    });
    afterAll(async () => {
      await fx?.close();
    });
    test('schema introspection through pgwarden as a MANAGE user equals direct', async () => {
      const direct = await scenario.introspect(fx.direct);
      expect(await scenario.introspect(fx.via('dba'))).toEqual(direct);
    });
    // A migration in a transaction on a table a view reads: DDL never waits on its own lock.
    test('a migration up and down in a transaction on a table a view reads equals direct', async () => {
      const direct = await scenario.migrate(fx.direct);
      expect(await scenario.migrate(fx.via('dba'))).toEqual(direct);
    });
    test('a restricted user: the hidden column masked, the rest real', async () => {
      await scenario.restricted(fx.via('alice'));
    });
  });
}

/** The installed version of npm package `name` (its package.json, read from node_modules: some do not export it). */
export function packageVersion(name: string): string {
  const file = path.join(process.cwd(), 'node_modules', name, 'package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * A step of a Python scenario (`script URL STEP`, run by Debian's /usr/bin/python3): the
 * `result` of the JSON it prints. Rejects with its stderr when it exits non-zero.
 */
export async function pythonStep(script: string, tool: string, url: string, name: string): Promise<unknown> {
  const { run } = await import('../run-program.js');
  const r = await run('/usr/bin/python3', [script, url, name], { timeoutMs: 60_000 });
  if (r.code !== 0) throw new Error(`${tool} ${name} failed (exit ${r.code}):\n${r.stderr}`);
  return (JSON.parse(r.stdout) as { result: unknown }).result;
}
