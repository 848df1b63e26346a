// The proxy's hot path in process, no sockets: pgbench -S transactions through a real Relay, timed against a fixed reference workload.
import { EventEmitter } from 'node:events';
import type net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import YAML from 'yaml';
import { createScramVerifier } from '../src/auth/scram-verifier.js';
import { parseConfig } from '../src/policy/config-load.js';
import { DecisionCache } from '../src/policy/decision-cache.js';
import { AuditLog } from '../src/proxy/audit.js';
import { Relay } from '../src/proxy/relay.js';
import { SearchPathTracker } from '../src/proxy/search-path-tracker.js';
import type { UpstreamSession } from '../src/proxy/upstream.js';
import { RewriteCache } from '../src/rewrite/rewrite-cache.js';
import { createAnalysisCache, loadParser } from '../src/sql/analyze.js';
import * as be from '../src/wire/backend-encode.js';
import { MessageFramer } from '../src/wire/framer.js';
import * as fe from '../src/wire/frontend-encode.js';
import { pgbenchCatalog } from '../test/fixtures/demo-catalog.js';
import { median } from './stats.js';

/** pgbench's `-S` statement in simple mode (a literal) and in extended/prepared mode (a parameter). */
const SIMPLE_SQL = (aid: number) => `SELECT abalance FROM pgbench_accounts WHERE aid = ${aid};`;
const PARAM_SQL = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1;';
/**
 * Distinct requests per mode, played in turn: more simple-mode texts than the analysis cache keeps
 * exact entries for (10 000), so that, as under pgbench, an exact-text hit is rare.
 */
const RING = 20_000;

/** The bench's two users (bench/setup.ts): `dba` sees everything, `masked` has pgbench_accounts.filler hidden. */
const VERIFIER = createScramVerifier('hot-path');

function benchConfig() {
  const text = YAML.stringify({
    listen: '127.0.0.1:0',
    mode: 'proxified',
    databases: { bench: { url: 'postgres://app:app@127.0.0.1:1/bench' } },
    users: { dba: { scram: VERIFIER }, masked: { scram: VERIFIER } },
    roles: {
      dba: {
        tenants: ['u/dba'],
        permissions: [
          {
            effect: 'allow',
            actions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'MANAGE', 'SEE'],
            database: '*',
          },
        ],
      },
      masked: {
        tenants: ['u/masked'],
        permissions: [
          { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'bench' },
          {
            effect: 'deny',
            actions: ['SEE'],
            database: 'bench',
            schema: 'public',
            table: 'pgbench_accounts',
            column: 'filler',
          },
        ],
      },
    },
  });
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'hot-path.yaml');
  return parseConfig(text, file, {}).config;
}

/** A stand-in for a net.Socket: what the relay writes is handed to `sink`; `feed` plays incoming bytes. */
class FakeSocket extends EventEmitter {
  writableNeedDrain = false;
  constructor(private readonly sink: (b: Buffer) => void) {
    super();
  }
  write(b: Buffer): boolean {
    this.sink(b);
    return true;
  }
  end(b?: Buffer): void {
    if (b) this.sink(b);
  }
  cork(): void {}
  uncork(): void {}
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  feed(b: Buffer): void {
    this.emit('data', b);
  }
}

/** The upstream's replies to one pgbench -S transaction, as one chunk per round trip. */
function replies(accountsOid: number) {
  // Through the masking subquery too, Postgres reports the base column as the origin.
  const field = {
    name: 'abalance',
    tableOid: accountsOid,
    columnAttnum: 3,
    typeOid: 23,
    typeSize: 4,
    typeModifier: -1,
    format: 0 as const,
  };
  const rows = [be.rowDescription([field]), be.dataRow([Buffer.from('0')]), be.commandComplete('SELECT 1')];
  return {
    simple: Buffer.concat([...rows, be.readyForQuery('I')]),
    extended: Buffer.concat([be.parseComplete(), be.bindComplete(), ...rows, be.readyForQuery('I')]),
    prepared: Buffer.concat([be.bindComplete(), ...rows, be.readyForQuery('I')]),
    parsed: Buffer.concat([be.parseComplete(), be.readyForQuery('I')]),
  };
}

/** One client's relay in process: `txn(mode, aid)` runs one pgbench -S transaction through it. */
export interface HotPathWorld {
  /** Runs the `i`-th transaction (its account: one of RING); throws when the relay sent nothing on. */
  txn(mode: 'simple' | 'extended' | 'prepared', i: number): void;
  /** Audit lines written so far. */
  readonly auditLines: () => number;
}

/**
 * Builds the world: the bench policy (user `dba` or `masked`), the demo catalog with
 * pgbench_accounts, the server's caches, an AuditLog over pino writing to memory (pino's
 * serialisation and the audit's own work included, no I/O), and a Relay between two fake sockets.
 * The pgbench statement is prepared once (`-M prepared`'s Parse).
 */
export async function hotPathWorld(user: 'dba' | 'masked'): Promise<HotPathWorld> {
  await loadParser(15);
  const config = benchConfig();
  const catalog = pgbenchCatalog();
  const accounts = catalog.relations.get('public.pgbench_accounts')?.oid ?? 0;
  let lines = 0;
  const auditLogger = pino(
    { level: 'info', base: undefined },
    {
      write: () => {
        lines++;
      },
    },
  );
  const audit = new AuditLog(auditLogger, () => 'epoch-of-the-bench');
  const log = pino({ level: 'warn', base: undefined }, { write: () => {} });
  let toUpstream = 0;
  let toClient = 0;
  const client = new FakeSocket((b) => {
    toClient += b.length;
  });
  const upSocket = new FakeSocket((b) => {
    toUpstream += b.length;
  });
  const upstream: UpstreamSession = {
    socket: upSocket as unknown as net.Socket,
    parameters: new Map(),
    parameterMessages: [],
    processId: 1,
    secretKey: 2,
    serverVersionNum: catalog.serverVersionNum,
    framer: new MessageFramer({ maxMessageBytes: 1 << 20, startup: false }),
    pending: [],
  };
  const decisions = new DecisionCache();
  const relay = new Relay({
    client: client as unknown as net.Socket,
    upstream,
    log,
    audit,
    connId: 1,
    identity: user,
    gateSession: {
      config,
      roles: [user],
      database: 'bench',
      connection: 'proxified',
      paths: new SearchPathTracker(['"$user"', 'public']),
      names: { prepared: new Map(), cursors: new Map() },
      rewrites: new RewriteCache(),
      catalog: async () => catalog,
      catalogNow: () => catalog,
      inBandCatalog: async () => null,
    },
    cache: createAnalysisCache(),
    decide: (a, roles, ctx) => decisions.decide(a, roles, ctx),
    invalidateCatalog: () => {},
    maxMessageBytes: 1 << 20,
    terminate: (f) => {
      throw new Error(`relay terminated the session: ${f?.message ?? ''}`);
    },
    onTransactionStatus: () => {},
  });
  relay.start();
  const r = replies(accounts);
  const round = (request: Buffer, reply: Buffer) => {
    const up = toUpstream;
    const down = toClient;
    client.feed(request);
    if (toUpstream === up) throw new Error('the relay sent nothing upstream');
    upSocket.feed(reply);
    if (toClient === down) throw new Error('the relay sent nothing to the client');
  };
  round(Buffer.concat([fe.parse('P0_1', PARAM_SQL), fe.sync()]), r.parsed);
  // What pgbench sends, encoded beforehand for RING accounts (its random aid: mostly 5 digits).
  const aids = Array.from({ length: RING }, (_, i) => 1 + ((i * 7919 + 13) % 100_000));
  const few = aids.slice(0, 64);
  const param = (aid: number) => [Buffer.from(String(aid))];
  const requests = {
    simple: aids.map((aid) => fe.query(SIMPLE_SQL(aid))),
    extended: few.map((aid) =>
      Buffer.concat([
        fe.parse('', PARAM_SQL),
        fe.bind({ params: param(aid) }),
        fe.describe('P'),
        fe.execute(),
        fe.sync(),
      ]),
    ),
    prepared: few.map((aid) =>
      Buffer.concat([
        fe.bind({ statement: 'P0_1', params: param(aid) }),
        fe.describe('P'),
        fe.execute(),
        fe.sync(),
      ]),
    ),
  };
  return {
    txn(mode, i) {
      const list = requests[mode];
      round(list[i % list.length] as Buffer, r[mode]);
    },
    auditLines: () => lines,
  };
}

/**
 * The fixed reference workload: the kinds of work the hot path does (a JSON line, a Buffer
 * written and read, a string key looked up, a regular expression, small objects), none of it
 * pgwarden's code, so that its time tracks the machine (and the Node version), not the proxy.
 * Returns a number so the work cannot be optimised away.
 */
export function referenceWork(i: number): number {
  const text = `SELECT abalance FROM pgbench_accounts WHERE aid = ${i % 100_000};`;
  const line = JSON.stringify({
    level: 30,
    time: 1_700_000_000_000 + i,
    audit: true,
    conn: i & 7,
    identity: 'dba',
    roles: ['dba'],
    database: 'bench',
    searchPath: ['"$user"', 'public'],
    kind: 'SELECT',
    sql: text,
    decision: 'allowed',
    durationMs: (i % 1000) / 1000,
    rows: 1,
    msg: 'statement',
  });
  const b = Buffer.allocUnsafe(5 + Buffer.byteLength(text) + 1);
  b[0] = 0x51;
  b.writeInt32BE(b.length - 1, 1);
  b.write(text, 5);
  b[b.length - 1] = 0;
  const back = b.toString('utf8', 5, b.length - 1);
  const key = `15\u00011\u0001${back}`;
  REFERENCE_MAP.set(key, i);
  if (REFERENCE_MAP.size > 64) REFERENCE_MAP.clear();
  const parts = [b.subarray(0, 5), b.subarray(5)].map((x, k) => ({ k, n: x.length }));
  let s = 0;
  for (const p of parts) s += p.n * (p.k + 1);
  return s + line.length + (/^\s*select\b/i.test(back) ? 1 : 0) + (REFERENCE_MAP.get(key) ?? 0);
}
const REFERENCE_MAP = new Map<string, number>();

/** Subject iterations run before measuring (six transactions each). */
const WARM_UP = 3000;

/** What one measurement found: the subject's time per iteration over the reference's, and both times. */
export interface HotPathMeasurement {
  /** Median over the rounds of (subject ns per iteration) / (reference ns per iteration). */
  readonly ratio: number;
  /** Median subject time per iteration (one pgbench -S transaction in each mode, for each user), µs. */
  readonly subjectUs: number;
  /** Median reference time per iteration, µs. */
  readonly referenceUs: number;
  readonly rounds: number;
}

/** The subject and the reference of a measurement, warmed up (see {@link hotPathBench}). */
export interface HotPathBench {
  /** One measurement: `rounds` interleaved pairs of slices `sliceMs` of CPU time long. */
  measure(opts?: { rounds?: number; sliceMs?: number }): HotPathMeasurement;
}

/**
 * Builds what {@link HotPathBench.measure} times and warms it up: the subject is one pgbench -S
 * transaction in simple, extended and prepared mode for `dba` and for `masked` (six transactions,
 * six audit lines); the reference is {@link referenceWork}. A measurement runs one slice of each
 * per round (the order alternating), and the ratio of the round is the subject's time per
 * iteration over the reference's. Times are this process's CPU time (getrusage), not wall time:
 * time spent preempted by other processes on a shared machine is not counted; what a busy
 * machine still does to them (caches, frequency) lands on both sides of a round alike, and the
 * median over the rounds drops the rounds it did not.
 */
export async function hotPathBench(): Promise<HotPathBench> {
  const worlds = [await hotPathWorld('dba'), await hotPathWorld('masked')];
  let t = 0;
  const subject = () => {
    t++;
    for (const w of worlds) {
      w.txn('simple', t);
      w.txn('extended', t);
      w.txn('prepared', t);
    }
  };
  let sink = 0;
  let ri = 0;
  const reference = () => {
    sink += referenceWork(ri++);
  };
  const cpuNs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) * 1000;
  };
  const rate = (f: () => void, ms: number) => {
    let n = 0;
    const t0 = cpuNs();
    while (cpuNs() - t0 < ms * 1e6) {
      for (let k = 0; k < 10; k++) f();
      n += 10;
    }
    return n / ms;
  };
  // The relay's code reaches its optimised tier only after a few thousand transactions.
  for (let k = 0; k < WARM_UP; k++) subject();
  for (let k = 0; k < WARM_UP * 10; k++) reference();
  const subjectPerMs = rate(subject, 50);
  const referencePerMs = rate(reference, 50);
  const time = (f: () => void, n: number) => {
    const t0 = cpuNs();
    for (let k = 0; k < n; k++) f();
    return (cpuNs() - t0) / n;
  };
  return {
    measure(opts = {}) {
      const rounds = opts.rounds ?? 21;
      const sliceMs = opts.sliceMs ?? 10;
      const nSub = Math.max(10, Math.round(subjectPerMs * sliceMs));
      const nRef = Math.max(10, Math.round(referencePerMs * sliceMs));
      const ratios: number[] = [];
      const subs: number[] = [];
      const refs: number[] = [];
      for (let r = 0; r < rounds; r++) {
        let s: number;
        let f: number;
        if (r % 2 === 0) {
          s = time(subject, nSub);
          f = time(reference, nRef);
        } else {
          f = time(reference, nRef);
          s = time(subject, nSub);
        }
        ratios.push(s / f);
        subs.push(s);
        refs.push(f);
      }
      if (sink === Number.MIN_VALUE) process.stdout.write('');
      return {
        ratio: median(ratios),
        subjectUs: median(subs) / 1000,
        referenceUs: median(refs) / 1000,
        rounds,
      };
    },
  };
}

/**
 * The guard's figure: the lowest ratio of `tries` measurements of one warmed-up bench (noise on a
 * shared machine only ever slows a measurement; a slower hot path slows them all).
 */
export async function bestHotPath(
  tries = 3,
  opts: { rounds?: number; sliceMs?: number } = {},
): Promise<HotPathMeasurement> {
  const bench = await hotPathBench();
  let best: HotPathMeasurement | undefined;
  for (let i = 0; i < tries; i++) {
    const m = bench.measure(opts);
    if (!best || m.ratio < best.ratio) best = m;
  }
  return best as HotPathMeasurement;
}
