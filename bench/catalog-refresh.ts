// What DDL costs through pgwarden (issue 15): the statement after a CREATE TABLE (roles managed and single), DDL in a transaction on a table a view reads, other sessions meanwhile, full and incremental catalog reads.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import pino from 'pino';
import { readCatalog } from '../src/catalog/read-catalog.js';
import type { Catalog } from '../src/catalog/types.js';
import { startDemoWorld } from './demo-world.js';

const ROUNDS = 9;

function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
}

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

/** Medians (ms) of: the CREATE TABLE, the statement right after it, and the one after that. */
async function afterCreate(c: pg.Client, inTx: boolean): Promise<[number, number, number]> {
  const create: number[] = [];
  const next: number[] = [];
  const later: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    if (inTx) await c.query('BEGIN');
    create.push(await timed(() => c.query(`CREATE TABLE bench_ct_${i} (id int PRIMARY KEY, v text)`)));
    next.push(await timed(() => c.query(`SELECT id, v FROM bench_ct_${i}`)));
    later.push(await timed(() => c.query(`SELECT id, v FROM bench_ct_${i}`)));
    await c.query(inTx ? 'ROLLBACK' : `DROP TABLE bench_ct_${i}`);
  }
  return [median(create), median(next), median(later)];
}

async function main(): Promise<void> {
  const world = await startDemoWorld();
  try {
    const app = world.app;
    const start = (roles: 'managed' | 'single') => world.start(roles, pino({ level: 'silent' }));
    const rows: string[] = [];
    // roles: single first (its own proxy), then the demo's roles: managed for everything else.
    const single = await start('single');
    let proxy = single;
    const url = (u: string) => `postgres://${u}:${u}@127.0.0.1:${proxy.address.port}/demo`;
    const client = async (u?: string) => {
      const c = u ? new pg.Client({ connectionString: url(u) }) : new pg.Client({ ...app, database: 'demo' });
      await c.connect();
      await c.query('SELECT 1');
      return c;
    };
    try {
      for (const roles of ['single', 'managed'] as const) {
        if (roles === 'managed') {
          await single.close(200);
          proxy = await start('managed');
        }
        for (const inTx of [false, true]) {
          const d = await client();
          const p = await client('dba');
          const [dc, dn, dl] = await afterCreate(d, inTx);
          const [pc, pn, pl] = await afterCreate(p, inTx);
          await Promise.all([d.end(), p.end()]);
          const where = `${inTx ? 'in a transaction' : 'autocommit'}, roles: ${roles}`;
          rows.push(`| CREATE TABLE, ${where} | ${dc.toFixed(1)} | ${pc.toFixed(1)} |`);
          rows.push(`| the statement after it, ${where} | ${dn.toFixed(1)} | ${pn.toFixed(1)} |`);
          rows.push(`| the one after that, ${where} | ${dl.toFixed(1)} | ${pl.toFixed(1)} |`);
        }
        // Another session (alice: a set login under roles: managed, whose grants follow the DDL)
        // naming the table the moment dba's CREATE TABLE returns.
        const [dba, alice] = [await client('dba'), await client('alice')];
        const [dd, da] = [await client(), await client()];
        const other = async (maker: pg.Client, reader: pg.Client): Promise<number> => {
          const xs: number[] = [];
          for (let i = 0; i < ROUNDS; i++) {
            await maker.query(`CREATE TABLE bench_o_${i} (id int PRIMARY KEY, v text)`);
            xs.push(await timed(() => reader.query(`SELECT id, v FROM bench_o_${i}`)));
            await maker.query(`DROP TABLE bench_o_${i}`);
          }
          return median(xs);
        };
        const [od, op] = [await other(dd, da), await other(dba, alice)];
        await Promise.all([dba.end(), alice.end(), dd.end(), da.end()]);
        rows.push(
          `| another user's first statement on it, roles: ${roles} | ${od.toFixed(1)} | ${op.toFixed(1)} |`,
        );
      }
      // The repro: BEGIN; ALTER TABLE users (a view reads it); SELECT 1; and another session meanwhile.
      const mig = await client('dba');
      const other = await client('alice');
      const alter: number[] = [];
      const meanwhile: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        await mig.query('BEGIN');
        await mig.query(`ALTER TABLE users ADD COLUMN bench_x${i} int`);
        alter.push(await timed(() => mig.query('SELECT 1')));
        meanwhile.push(await timed(() => other.query('SELECT name FROM orgs')));
        await mig.query('ROLLBACK');
      }
      await Promise.all([mig.end(), other.end()]);
      rows.push(`| \`SELECT 1\` after \`BEGIN; ALTER TABLE users …\` | – | ${median(alter).toFixed(1)} |`);
      rows.push(`| another session's statement meanwhile | – | ${median(meanwhile).toFixed(1)} |`);
      // The catalog reads themselves, on one connection.
      const c = await client();
      let base: Catalog = await readCatalog(c, 1);
      const full: number[] = [];
      const incremental: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        await c.query(`CREATE TABLE bench_r_${i} (id int)`);
        incremental.push(await timed(async () => (base = await readCatalog(c, i + 2, base))));
        full.push(await timed(() => readCatalog(c, i + 2)));
      }
      await c.end();
      rows.push(`| full catalog read (\`readCatalog\`) | – | ${median(full).toFixed(1)} |`);
      rows.push(`| incremental catalog read after a CREATE TABLE | – | ${median(incremental).toFixed(1)} |`);
    } finally {
      await proxy.close(200);
    }
    const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    process.stdout.write(
      [
        `# DDL through pgwarden (medians of ${ROUNDS}, ms; load average ${load})`,
        '',
        '| what | direct | pgwarden |',
        '|---|---:|---:|',
        ...rows,
        '',
      ].join('\n'),
    );
  } finally {
    await world.stop();
  }
}

await main();
