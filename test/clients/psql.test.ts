// psql 15 scenario through pgwarden: meta-commands compared with a direct connection, \copy, prepared, transactions, masks, 42501.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  appClient,
  appUrl,
  driverConfig,
  dropDatabase,
  freshDatabase,
  requireTool,
} from '../helpers/drivers/tools.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { psql } from '../helpers/psql.js';

/** A database of this suite's own (the demo schema plus a schema and a function), so concurrent suites do not change what \d shows. */
const DB = 'pgw_drivers_psql';

let proxy: TestProxy;
let version = '';
beforeAll(async () => {
  version = requireTool('psql 15', ['psql', '--version'], 'postgresql-client-15');
  await freshDatabase(DB, true);
  const app = await appClient(DB);
  await app.query(`
    create schema reporting;
    create view reporting.order_totals as select user_id, sum(amount) as total from public.orders group by user_id;
    create function public.order_count(uid int) returns bigint language sql stable as 'select count(*) from public.orders where user_id = uid';
    comment on table public.users is 'people';`);
  await app.end();
  proxy = await startTestProxy(driverConfig([DB]));
});
afterAll(async () => {
  await proxy?.close();
  await dropDatabase(DB);
});

/** Runs psql through pgwarden as dba and directly as the upstream login; both must print the same. */
async function same(args: readonly string[], input = ''): Promise<string> {
  const [via, direct] = await Promise.all([
    psql(proxy.url('dba', 'dba', DB), args, input),
    psql(appUrl(DB), args, input),
  ]);
  expect(via.stderr).toBe(direct.stderr);
  expect(via.stdout).toBe(direct.stdout);
  expect(via.code).toBe(direct.code);
  return via.stdout;
}

describe('psql 15', () => {
  test('is installed', () => {
    expect(version).toMatch(/psql \(PostgreSQL\) 15\./);
  });

  test('\\d lists relations, as directly', async () => {
    const out = await same(['-c', '\\d']);
    for (const t of ['orgs', 'users', 'orders'])
      expect(out).toMatch(new RegExp(`public \\| ${t}\\s+\\| table`));
  });

  test('\\d+ users describes the table with storage, comment and indexes, as directly', async () => {
    const out = await same(['-c', '\\d+ users']);
    expect(out).toContain('Table "public.users"');
    expect(out).toContain('"users_pkey" PRIMARY KEY, btree (id)');
    expect(out).toContain('Access method: heap');
  });

  test('\\dt, \\dn, \\df, \\dv reporting.* as directly', async () => {
    const [dt, dn, df, dv] = await Promise.all([
      same(['-c', '\\dt']),
      same(['-c', '\\dn']),
      same(['-c', '\\df']),
      same(['-c', '\\dv reporting.*']),
    ]);
    expect(dt).toMatch(/public \| orders\s+\| table/);
    expect(dn).toMatch(/reporting/);
    expect(df).toMatch(/order_count\s+\| bigint\s+\| uid integer/);
    expect(dv).toMatch(/order_totals/);
  });

  test('\\l lists the databases', async () => {
    const r = await psql(proxy.url('dba', 'dba', DB), ['-c', '\\l']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/demo\s+\| pgwarden_app/);
    expect(r.stdout).toMatch(new RegExp(`${DB}\\s+\\| pgwarden_app`));
  });

  test('simple queries, PREPARE/EXECUTE and \\gset, as directly', async () => {
    const out = await same(
      ['-tA'],
      [
        'select count(*) as n from users \\gset',
        'select :n + 1;',
        'prepare by_id(int) as select id, name from users where id = $1;',
        'execute by_id(3);',
        'execute by_id(4);',
        'deallocate by_id;',
      ].join('\n'),
    );
    expect(out).toContain('3|Cleo Zeller');
    expect(out).toContain('4|Dario Solberg');
  });

  test('a transaction with an error and recovery (ON_ERROR_ROLLBACK savepoints too), as directly', async () => {
    const script = [
      'create table drv_psql_tx (id int primary key);',
      'begin;',
      'insert into drv_psql_tx values (1);',
      'insert into drv_psql_tx values (1);',
      'select 1;',
      'rollback;',
      '\\set ON_ERROR_ROLLBACK on',
      'begin;',
      'insert into drv_psql_tx values (2);',
      'select 1/0;',
      'insert into drv_psql_tx values (3);',
      'commit;',
      'select id from drv_psql_tx order by id;',
      'drop table drv_psql_tx;',
    ].join('\n');
    const via = await psql(
      proxy.url('dba', 'dba', DB),
      ['-tA', '-v', 'ON_ERROR_STOP=0', '-v', 'VERBOSITY=verbose'],
      script,
    );
    const direct = await psql(
      appUrl(DB),
      ['-tA', '-v', 'ON_ERROR_STOP=0', '-v', 'VERBOSITY=verbose'],
      script,
    );
    expect(via.stdout).toBe(direct.stdout);
    expect(via.stderr.replace(/psql:<stdin>:\d+: /g, '')).toBe(
      direct.stderr.replace(/psql:<stdin>:\d+: /g, ''),
    );
    expect(via.stderr).toContain('23505');
    expect(via.stderr).toContain('25P02');
    expect(via.stderr).toContain('22012');
    expect(via.stdout.trim().split('\n').slice(-3)).toEqual(['2', '3', 'DROP TABLE']);
  });

  test('\\copy out and back in as dba', async () => {
    const out = await psql(proxy.url('dba', 'dba', DB), [
      '-c',
      '\\copy (select id, name, org_id from users order by id) to stdout with (format csv, header)',
    ]);
    expect(out.stderr).toBe('');
    const lines = out.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('id,name,org_id');
    expect(lines[1]).toBe('1,Ada Tervo,2');
    const script = [
      'create table drv_psql_copy (id int, name text, org_id int);',
      '\\copy drv_psql_copy from stdin with (format csv, header)',
      out.stdout.trimEnd(),
      '\\.',
      'select count(*), sum(org_id) from drv_psql_copy;',
      'drop table drv_psql_copy;',
    ].join('\n');
    const back = await psql(proxy.url('dba', 'dba', DB), ['-tA'], `${script}\n`);
    expect(back.stderr).toBe('');
    expect(back.stdout).toContain(`COPY ${lines.length - 1}`);
    expect(back.stdout).toMatch(/^15\|39$/m);
  });

  test('alice: masked columns print as *****', async () => {
    const r = await psql(proxy.url('alice'), [
      '-tA',
      '-c',
      'select id, name, email, org_id from users where id = 2',
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('2|Bram Wendt|*****|*****');
  });

  test('alice: a refused statement is an ERROR with SQLSTATE 42501; \\d users still works', async () => {
    const r = await psql(
      proxy.url('alice'),
      ['-v', 'VERBOSITY=verbose', '-v', 'ON_ERROR_STOP=0', '-tA'],
      "select id from users where ssn = '1';\nselect 'next';\n",
    );
    expect(r.stderr).toMatch(/ERROR: {2}42501: .*users\.ssn/);
    expect(r.stdout.trim()).toBe('next');
    const d = await psql(proxy.url('alice'), ['-c', '\\d users']);
    expect(d.stderr).toBe('');
    expect(d.stdout).toMatch(/org_id\s+\| integer/);
  });
});
