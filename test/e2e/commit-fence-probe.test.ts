// The commit fence's lock probe against the real PostgreSQL: what a committing backend holds AccessExclusiveLock on, with the views reading it, and who waits on it.
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD } from '../../src/embedded/demo.js';
import { CatalogSource } from '../../src/proxy/catalog-source.js';
import { ownerClient } from '../helpers/proxy-fixture.js';

const SETUP = `drop schema if exists fence_probe cascade; create schema fence_probe;
  create table fence_probe.t (id int); create view fence_probe.v1 as select id from fence_probe.t;
  create view fence_probe.v2 as select id from fence_probe.v1; create table fence_probe.other (id int)`;

let catalogs: CatalogSource;
beforeAll(async () => {
  const c = await ownerClient();
  await c.query(SETUP);
  await c.end();
  catalogs = new CatalogSource(60_000);
});
afterAll(async () => {
  await catalogs.close();
  const c = await ownerClient();
  await c.query('drop schema if exists fence_probe cascade');
  await c.end();
});

test('names the locked table, the views reading it (transitively), and the backends blocked by the holder', async () => {
  const { port } = inject('pg');
  const url = {
    host: '127.0.0.1',
    port,
    user: 'pgwarden_app',
    password: DEMO_APP_PASSWORD,
    database: 'demo',
  };
  const holder = await ownerClient();
  const waiter = await ownerClient();
  try {
    await holder.query('begin; lock table fence_probe.t in access exclusive mode');
    const holderPid = (await holder.query('select pg_backend_pid() as p')).rows[0].p as number;
    const waiterPid = (await waiter.query('select pg_backend_pid() as p')).rows[0].p as number;
    const waiting = waiter.query('select * from fence_probe.v2').catch(() => undefined);
    const probe = catalogs.lockProbe('demo', url);
    let got = await probe(holderPid, [waiterPid]);
    for (let i = 0; i < 300 && !(got.blockers.get(waiterPid) ?? []).includes(holderPid); i++) {
      await new Promise((r) => setTimeout(r, 50));
      got = await probe(holderPid, [waiterPid]);
    }
    const oids = (
      await holder.query(
        `select c.relname, c.oid::int8 as oid from pg_class c where c.relnamespace = 'fence_probe'::regnamespace`,
      )
    ).rows.map((r) => [r.relname as string, Number(r.oid)] as const);
    const named = new Map(oids);
    expect([...got.locked].sort()).toEqual([named.get('t'), named.get('v1'), named.get('v2')].sort());
    expect(got.blockers.get(waiterPid)).toEqual([holderPid]);
    await holder.query('rollback');
    await waiting;
  } finally {
    await holder.end();
    await waiter.end();
  }
});
