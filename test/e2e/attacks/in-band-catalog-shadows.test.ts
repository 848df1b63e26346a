// The in-band catalog read on a client's own connection reads pg_catalog's relations, never the session's temporary ones of the same name.
// PostgreSQL searches the session's temporary schema first for relations unless the path lists pg_temp (5.9.3 "even before pg_catalog").
import { expect, test } from 'vitest';
import { SSNS } from '../../helpers/outcomes.js';
import { demoConfigWithManage } from '../../helpers/proxy.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({
  // MANAGE added to analyst (alice), who still has no SEE on users.ssn.
  config: () => demoConfigWithManage('analyst'),
  setup: 'drop schema if exists atk_shadow cascade; create schema atk_shadow',
  teardown: 'drop schema if exists atk_shadow cascade',
});

test('a temporary table named pg_attribute does not rename users.ssn in the in-band catalog', async () => {
  const c = await fx.proxy.client('alice');
  try {
    await c.query('begin');
    await c.query('create table atk_shadow.t (x int)');
    // DDL in the transaction: the next statement naming something new is analyzed with a catalog
    // read on this connection. The fake pg_attribute (a table: the read uses
    // xmin) calls ssn `nickname` and email `contact`, names no rule hides.
    await c.query(`create temp table pg_attribute as
      select attrelid, case attname when 'ssn' then 'nickname'::name when 'email' then 'contact'::name else attname end as attname,
             attnum, atttypid, atttypmod, attnotnull, attgenerated, attisdropped
        from pg_catalog.pg_attribute`);
    await c.query('select x from atk_shadow.t');
    const r = await c.query('select * from public.users order by id limit 3').then(
      (x) => x.rows,
      (e: Error) => e.message,
    );
    expect(JSON.stringify(r)).not.toContain(SSNS[0]);
    expect(Array.isArray(r) && r.map((row: Record<string, unknown>) => row.ssn)).toEqual([
      '*****',
      '*****',
      '*****',
    ]);
  } finally {
    await c.query('rollback').catch(() => undefined);
    await c.end();
  }
});
