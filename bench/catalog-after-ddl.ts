// The statement after DDL through pgwarden vs direct on the demo (issue 15 target: ≤ 20 ms over direct): full-rights and managed-role users, autocommit and in a transaction, with where the time goes.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { startDemoWorld } from './demo-world.js';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
/** `--rounds N` (default 7); `--only TEXT` runs the cases whose name contains TEXT; `--roles managed|single`. */
const ROUNDS = Number(arg('--rounds')) || 7;
const ONLY = arg('--only');
const MODES = (arg('--roles')?.split(',') ?? ['managed', 'single']) as ('managed' | 'single')[];

function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
}

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

/** Log events with a duration (`ms`) the proxy wrote: catalog reads and grant syncs. */
const events: { event: string; ms: number; at: number }[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      try {
        const o = JSON.parse(line) as { event?: string; ms?: number };
        if (o.event && (typeof o.ms === 'number' || o.event === 'in-band-catalog'))
          events.push({ event: o.event, ms: o.ms ?? 0, at: Date.now() });
      } catch {
        // not JSON
      }
    }
    done();
  },
});

/** One case: `ddl` on the maker, then `next` on the reader; both timed. Returns per-round ms. */
interface Case {
  readonly name: string;
  /** Runs one round on (maker, reader); `i` names the round's table. Returns the time of the statement after the DDL. */
  run(maker: pg.Client, reader: pg.Client, i: number): Promise<number>;
}

const table = (i: number) => `bench_ad_${i}`;

const CASES: readonly Case[] = [
  {
    name: 'full rights, autocommit: SELECT after CREATE TABLE',
    async run(m, _r, i) {
      await m.query(`CREATE TABLE ${table(i)} (id int PRIMARY KEY, v text)`);
      const t = await timed(() => m.query(`SELECT id, v FROM ${table(i)}`));
      await m.query(`DROP TABLE ${table(i)}`);
      return t;
    },
  },
  {
    name: 'full rights, autocommit: SELECT after ALTER TABLE ADD COLUMN',
    async run(m, _r, i) {
      await m.query(`CREATE TABLE ${table(i)} (id int PRIMARY KEY, v text)`);
      await m.query(`SELECT id FROM ${table(i)}`);
      await m.query(`ALTER TABLE ${table(i)} ADD COLUMN w int`);
      const t = await timed(() => m.query(`SELECT id, v, w FROM ${table(i)}`));
      await m.query(`DROP TABLE ${table(i)}`);
      return t;
    },
  },
  {
    name: 'full rights, autocommit: SELECT after DROP TABLE',
    async run(m, _r, i) {
      await m.query(`CREATE TABLE ${table(i)} (id int PRIMARY KEY, v text)`);
      await m.query(`SELECT id FROM ${table(i)}`);
      await m.query(`DROP TABLE ${table(i)}`);
      return timed(() => m.query('SELECT id, name FROM orgs'));
    },
  },
  {
    name: 'full rights, in a transaction: SELECT after CREATE TABLE',
    async run(m, _r, i) {
      await m.query('BEGIN');
      await m.query(`CREATE TABLE ${table(i)} (id int PRIMARY KEY, v text)`);
      const t = await timed(() => m.query(`SELECT id, v FROM ${table(i)}`));
      await m.query('ROLLBACK');
      return t;
    },
  },
  {
    name: 'full rights: COMMIT of a transaction with CREATE TABLE, then SELECT',
    async run(m, _r, i) {
      await m.query('BEGIN');
      await m.query(`CREATE TABLE ${table(i)} (id int PRIMARY KEY, v text)`);
      await m.query('COMMIT');
      const t = await timed(() => m.query(`SELECT id, v FROM ${table(i)}`));
      await m.query(`DROP TABLE ${table(i)}`);
      return t;
    },
  },
  {
    name: "restricted, autocommit: another user's SELECT of the new table",
    async run(m, r, i) {
      await m.query(`CREATE TABLE ${table(i)} (id int PRIMARY KEY, v text)`);
      const t = await timed(() => r.query(`SELECT id, v FROM ${table(i)}`));
      await m.query(`DROP TABLE ${table(i)}`);
      return t;
    },
  },
  {
    name: 'restricted, autocommit: SELECT of an old table after DDL elsewhere',
    async run(m, r, i) {
      await m.query(`CREATE TABLE ${table(i)} (id int PRIMARY KEY, v text)`);
      const t = await timed(() => r.query('SELECT id, name FROM orgs'));
      await m.query(`DROP TABLE ${table(i)}`);
      return t;
    },
  },
  {
    name: 'restricted, in a transaction: SELECT of the new table',
    async run(m, r, i) {
      await r.query('BEGIN');
      await r.query('SELECT 1');
      await m.query(`CREATE TABLE ${table(i)} (id int PRIMARY KEY, v text)`);
      const t = await timed(() => r.query(`SELECT id, v FROM ${table(i)}`));
      await r.query('COMMIT');
      await m.query(`DROP TABLE ${table(i)}`);
      return t;
    },
  },
];

async function main(): Promise<void> {
  const world = await startDemoWorld();
  const app = world.app;
  const rows: string[] = [];
  const profile: string[] = [];
  try {
    for (const roles of MODES) {
      const proxy = await world.start(roles, pino({ level: 'debug' }, sink));
      const connect = async (u?: string) => {
        const c = u
          ? new pg.Client({ connectionString: `postgres://${u}:${u}@127.0.0.1:${proxy.address.port}/demo` })
          : new pg.Client({ ...app, database: 'demo' });
        await c.connect();
        await c.query('SELECT 1');
        return c;
      };
      try {
        for (const c of CASES.filter((x) => ONLY === undefined || x.name.includes(ONLY))) {
          const restricted = c.name.startsWith('restricted');
          const [dm, dr] = [await connect(), await connect()];
          const [pm, pr] = [await connect('dba'), await connect(restricted ? 'alice' : 'dba')];
          // Two warm-up rounds each (the first statements after a proxy starts run cold code), then
          // the rounds interleaved (direct, pgwarden) under the same load.
          for (const i of [900, 901]) {
            await c.run(dm, dr, i);
            await c.run(pm, pr, i + 10);
          }
          const d: number[] = [];
          const p: number[] = [];
          const syncs: number[] = [];
          const reads: number[] = [];
          const inBandMs: number[] = [];
          let inBand = 0;
          for (let i = 0; i < ROUNDS; i++) {
            d.push(await c.run(dm, dr, i));
            const from = events.length;
            p.push(await c.run(pm, pr, i));
            // Let the DROP's background read and sync land before the next round.
            await new Promise((r) => setTimeout(r, 150));
            for (const e of events.slice(from)) {
              if (e.event === 'grant-sync') syncs.push(e.ms);
              if (e.event === 'catalog-read') reads.push(e.ms);
              if (e.event === 'in-band-catalog') inBand++;
              if (e.event === 'in-band-catalog-read') inBandMs.push(e.ms);
            }
          }
          await Promise.all([dm.end(), dr.end(), pm.end(), pr.end()]);
          const [md, mp] = [median(d), median(p)];
          rows.push(
            `| ${c.name}, roles: ${roles} | ${md.toFixed(1)} | ${mp.toFixed(1)} | ${(mp - md).toFixed(1)} |`,
          );
          profile.push(
            `| ${c.name}, roles: ${roles} | ${reads.length > 0 ? median(reads).toFixed(1) : '–'} | ${syncs.length > 0 ? median(syncs).toFixed(1) : '–'} | ${(inBand / ROUNDS).toFixed(1)} | ${inBandMs.length > 0 ? median(inBandMs).toFixed(1) : '–'} |`,
          );
        }
      } finally {
        await proxy.close(200);
      }
    }
    const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    process.stdout.write(
      [
        `# The statement after DDL (medians of ${ROUNDS} rounds, ms; load average ${load})`,
        '',
        '| case | direct | pgwarden | over direct |',
        '|---|---:|---:|---:|',
        ...rows,
        '',
        "Where the time goes: per round, the shared catalog reads and grant syncs the DDL caused (median ms of each), and in-band catalog reads (on the session's own connection) per round, with their median ms",
        '',
        '| case | catalog read | grant sync | in-band reads | in-band read |',
        '|---|---:|---:|---:|---:|',
        ...profile,
        '',
      ].join('\n'),
    );
  } finally {
    await world.stop();
  }
}

await main();
