// psql 15 through pgwarden: queries, \d, COPY both ways, errors.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { psql } from '../helpers/psql.js';

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

describe('psql through pgwarden', () => {
  test('alice counts users', async () => {
    const r = await psql(proxy.url('alice'), ['-tA', '-c', 'select count(*) from users']);
    expect(r.stderr).toBe('');
    expect(Number(r.stdout.trim())).toBeGreaterThanOrEqual(12);
  });

  test('\\d users describes the table', async () => {
    const r = await psql(proxy.url('alice'), ['-c', '\\d users']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Table "public.users"');
    expect(r.stdout).toMatch(/ssn\s+\| text/);
    expect(r.stdout).toContain('"users_pkey" PRIMARY KEY, btree (id)');
  });

  test('psql \\d users, \\dt, \\l work for alice', async () => {
    for (const cmd of ['\\d users', '\\dt', '\\l', '\\dn', '\\df']) {
      const r = await psql(proxy.url('alice'), ['-c', cmd]);
      expect(r.stderr, cmd).toBe('');
      expect(r.code, cmd).toBe(0);
    }
  });

  test('\\dt lists the three tables', async () => {
    const r = await psql(proxy.url('dba'), ['-c', '\\dt']);
    expect(r.code).toBe(0);
    for (const t of ['orgs', 'users', 'orders'])
      expect(r.stdout).toMatch(new RegExp(`public \\| ${t}\\s+\\| table`));
  });

  test('COPY out and back in (\\copy)', async () => {
    const out = await psql(proxy.url('dba'), [
      '-c',
      '\\copy (select id, name from orgs order by id) to stdout with csv',
    ]);
    expect(out.code).toBe(0);
    expect(out.stdout.split('\n')[0]).toBe('1,Acme Widgets');
    const script = [
      'create table orgs_copy (id int, name text);',
      '\\copy orgs_copy from stdin with csv',
      out.stdout.trimEnd(),
      '\\.',
      'select count(*) from orgs_copy;',
      'drop table orgs_copy;',
    ].join('\n');
    const back = await psql(proxy.url('dba'), ['-tA'], `${script}\n`);
    expect(back.stderr).toBe('');
    expect(back.stdout).toContain('COPY 4');
    expect(back.stdout.split('\n')).toContain('4');
  });

  test('an error shows its SQLSTATE and psql goes on', async () => {
    const r = await psql(proxy.url('dba'), [
      '-v',
      'VERBOSITY=verbose',
      '-v',
      'ON_ERROR_STOP=0',
      '-c',
      'select 1/0',
      '-c',
      'select 7',
    ]);
    expect(r.stderr).toContain('ERROR:  22012: division by zero');
    expect(r.stdout).toContain('7');
  });

  test('a wrong password fails with the server message', async () => {
    const r = await psql(proxy.url('alice', 'wrong'), ['-c', 'select 1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('password authentication failed for user "alice"');
  });
});

describe('DDL the shared catalog cannot see yet', () => {
  test('a table created inside a transaction is usable in that transaction', async () => {
    const script = [
      'begin;',
      'create table tx_made (id int primary key, label text);',
      "insert into tx_made values (1, 'one'), (2, 'two');",
      'select label from tx_made order by id;',
      'rollback;',
    ].join('\n');
    const r = await psql(proxy.url('dba'), ['-qtA'], `${script}\n`);
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')).toEqual(['one', 'two', '']);
  });

  test('temporary tables resolve first, as in Postgres', async () => {
    const script = [
      'create temp table users (id int, note text);',
      "insert into users values (1, 'temp row');",
      'select note from users;',
      'select count(*) from public.users;',
    ].join('\n');
    const r = await psql(proxy.url('dba'), ['-qtA'], `${script}\n`);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe('temp row');
    expect(Number(lines[1])).toBeGreaterThanOrEqual(12);
  });
});
