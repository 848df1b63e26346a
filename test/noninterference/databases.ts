// Creates the noninterference databases: same schema (one template, so every OID matches) and rows, different hidden values.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { DEMO_APP_PASSWORD, DEMO_APP_ROLE, DEMO_DIR, ensureDemoAppRole } from '../../src/embedded/demo.js';
import { type CoverageCase, parseCoverageCatalog } from '../unit/sql/parse-coverage-catalog.js';

/** Where to reach the PostgreSQL the databases live on, as its superuser. */
export interface PgServer {
  readonly host: string;
  readonly port: number;
  readonly superuser: string;
  readonly superuserPassword: string;
}

/** The three copies: `a` and `b` differ only in hidden values; `c` holds `a`'s values, loaded separately (the control). */
export type Side = 'a' | 'b' | 'c';
export const SIDES: readonly Side[] = ['a', 'b', 'c'];

/** The database name of one side: `<prefix>_<side>` (all three the same length, so names normalize alike). */
export function dbName(prefix: string, side: Side): string {
  return `${prefix}_${side}`;
}

/**
 * The hidden columns (no SEE for alice and bob), as the policy names them. The demo's three plus the
 * fixture's `user_secrets.ssn` (whose generated `ssn_last4` is derived from it) and the UNIQUE
 * `badges.code` (writes as reads).
 */
export const HIDDEN: readonly { table: string; column: string }[] = [
  { table: 'users', column: 'email' },
  { table: 'users', column: 'ssn' },
  { table: 'orgs', column: 'secret' },
  { table: 'user_secrets', column: 'ssn' },
  { table: 'badges', column: 'code' },
];

/**
 * FIXTURE_SQL of test/fixtures/make-catalog-fixture.ts (the objects the analysis corpus names beyond
 * the demo schema), read from its source: importing that module runs its main().
 */
function fixtureSql(): string {
  const src = fs.readFileSync(path.join(DEMO_DIR, '../../test/fixtures/make-catalog-fixture.ts'), 'utf8');
  const m = /export const FIXTURE_SQL = `([^`]*)`/.exec(src);
  if (!m?.[1]) throw new Error('FIXTURE_SQL not found in make-catalog-fixture.ts');
  return m[1];
}

export const PARSE_COVERAGE_FILE = '/work/shared/corpus/parse-coverage.json';

/** Hidden values per side: [A (the demo's), B]. B changes lengths, digits, NULLness, collides with other values. */
const ORG_SECRET: readonly [string | null, string | null][] = [
  ['acme-vault-7731', null], // non-NULL → NULL
  ['bf-key-0042', 'bf-key-0043'], // one digit
  ['cobalt-sk-9918', 'cobalt-sk-9918-rotated-2024-with-a-much-longer-value-than-before'],
  [null, 'Acme Widgets'], // NULL → non-NULL, equal to another org's name
];
const USER_EMAIL: readonly [string | null, string | null][] = [
  ['ada.tervo@example.com', 'ada.tervo@example.com'],
  ['bram.wendt@example.com', 'bram@x.io'],
  ['cleo.zeller@example.com', null],
  ['dario.solberg@example.com', 'dario.solberg@example.com'],
  ['elin.varga@example.com', 'ada.tervo@example.com'], // collides with user 1
  ['fenna.yablonski@example.com', ''],
  [null, 'gus@example.com'],
  ['hedda.ulving@example.com', 'HEDDA.ULVING@EXAMPLE.COM'],
  ['ivo.ximenez@example.com', 'Ivo Ximenez'], // equal to the user's own name
  ['juno.quist@example.com', 'juno.quist@example.com.very.long.subdomain.example.org'],
  ['kasper.tervo@example.com', 'kasper.tervo@example.com'],
  ['lior.wendt@example.com', '12'],
  ['mira.zeller@example.com', 'mira.zeller@example.com '],
  ['nils.solberg@example.com', 'nils.solberg@exampIe.com'],
  ['oona.varga@example.com', 'øona.värga@example.com'],
];
const USER_SSN: readonly [string | null, string | null][] = [
  ['901-13-7919', '901-13-7919'],
  ['902-16-5838', '902-16-5839'],
  ['903-19-3757', null],
  ['904-22-1676', '904221676'],
  ['905-25-9595', '0'],
  ['906-28-7514', '906-28-7514'],
  ['907-31-5433', '907-31-5433-00'],
  ['908-34-3352', '1e3'],
  ['909-37-1271', '-5'],
  ['910-40-9190', '910-40-9190'],
  [null, '911-43-7109'],
  ['912-46-5028', '912-46-5028'],
  ['913-49-2947', ''],
  ['914-52-0866', '999-99-9999'],
  ['915-55-8785', '915-55-8785'],
];
/** user_secrets(user_id, ssn) for users 1–5. */
const SECRET_SSN: readonly [string | null, string | null][] = [
  ['901-13-7919', '901-13-7919'],
  ['902-16-5838', 'x'],
  [null, '903-19-3757'],
  ['904-22-1676', null],
  ['905-25-9595', '905-25-9595-905-25-9595'],
];
/** badges(id, code UNIQUE, label): unique on both sides, a value of A's absent from B and the reverse. */
const BADGE_CODE: readonly [string | null, string | null][] = [
  ['B-100', 'B-100'],
  ['B-200', 'zz'],
  [null, 'B-300'],
  ['B-400', null],
];

function lit(v: string | null): string {
  return v === null ? 'NULL' : pg.escapeLiteral(v);
}

/** The rows of one side: the demo's data.sql with the hidden values of `variant`, plus rows for the fixture tables. */
function dataSql(variant: 0 | 1): string {
  const pick = (pairs: readonly [string | null, string | null][], i: number) => pairs[i]?.[variant] ?? null;
  let sql = fs.readFileSync(path.join(DEMO_DIR, 'data.sql'), 'utf8');
  // Replace each row's hidden values, matched by the row's id.
  sql = sql.replace(
    /\((\d+), ('[^']*'), ('[^']*'|NULL), ('[^']*'|NULL), (\d+)\)/g,
    (_m, id, name, _e, _s, org) => {
      const i = Number(id) - 1;
      return `(${id}, ${name}, ${lit(pick(USER_EMAIL, i))}, ${lit(pick(USER_SSN, i))}, ${org})`;
    },
  );
  sql = sql.replace(/\(([1-4]), ('[^']*'), ('[^']*'|NULL)\)/g, (_m, id, name) => {
    return `(${id}, ${name}, ${lit(pick(ORG_SECRET, Number(id) - 1))})`;
  });
  const secrets = SECRET_SSN.map((_, i) => `(${i + 1}, ${lit(pick(SECRET_SSN, i))})`).join(', ');
  const badges = BADGE_CODE.map(
    (_, i) =>
      `(${i + 1}, ${lit(pick(BADGE_CODE, i))}, ${lit(['gold', 'silver', 'bronze', 'iron'][i] ?? null)})`,
  ).join(', ');
  return `${sql}
INSERT INTO user_secrets (user_id, ssn) VALUES ${secrets};
INSERT INTO badges (id, code, label) VALUES ${badges};
INSERT INTO categories (id, parent_id, name) VALUES (1, NULL, 'root'), (2, 1, 'tools'), (3, 2, 'saws'), (4, 1, 'food');
INSERT INTO "MixedCase" ("Id", "Name", lower_col) VALUES (1, 'One', 'one'), (2, 'Two', NULL);
INSERT INTO shipments (id, order_id, dest) VALUES (1, 1, ROW('1 Main St', 'Oslo')), (2, 3, NULL);
INSERT INTO app.users (id, handle) VALUES (1, 'ada'), (2, 'bram');
INSERT INTO app.audit (id, actor) VALUES (1, 'ada');
INSERT INTO public.pg_language (id, note) VALUES (1, 'shadowed');
REFRESH MATERIALIZED VIEW org_counts;
`;
}

/** Checks that the variants really differ where they should (a harness that compared equal data would prove nothing). */
function checkVariants(): void {
  for (const pairs of [ORG_SECRET, USER_EMAIL, USER_SSN, SECRET_SSN, BADGE_CODE]) {
    if (!pairs.some(([a, b]) => a !== b))
      throw new Error('a hidden column has the same values on both sides');
  }
  for (const pairs of [BADGE_CODE]) {
    for (const side of [0, 1] as const) {
      const vals = pairs.map((p) => p[side]).filter((v) => v !== null);
      if (new Set(vals).size !== vals.length) throw new Error('a UNIQUE hidden column repeats a value');
    }
  }
}

/**
 * DDL for the tables and columns the parse-coverage statements name (the catalog the unit test
 * analyzes them against), so that they run on a schema that has them.
 */
async function parseCoverageDdl(): Promise<string[]> {
  const cases = (JSON.parse(fs.readFileSync(PARSE_COVERAGE_FILE, 'utf8')) as { cases: CoverageCase[] }).cases;
  const cat = await parseCoverageCatalog(cases);
  const id = pg.escapeIdentifier;
  const out: string[] = [];
  for (const rel of cat.relations.values()) {
    if (['pg_catalog', 'information_schema', 'pg_toast'].includes(rel.schema)) continue;
    if (rel.kind !== 'table') continue;
    const q = `${id(rel.schema)}.${id(rel.name)}`;
    out.push(`CREATE SCHEMA IF NOT EXISTS ${id(rel.schema)};`);
    out.push(`CREATE TABLE IF NOT EXISTS ${q} ();`);
    for (const c of rel.columns)
      out.push(`ALTER TABLE ${q} ADD COLUMN IF NOT EXISTS ${id(c.name)} ${c.typeName};`);
  }
  return out;
}

async function client(server: PgServer, database: string, asApp: boolean): Promise<pg.Client> {
  const c = new pg.Client({
    host: server.host,
    port: server.port,
    user: asApp ? DEMO_APP_ROLE : server.superuser,
    password: asApp ? DEMO_APP_PASSWORD : server.superuserPassword,
    database,
  });
  await c.connect();
  return c;
}

/**
 * (Re)creates database `db` with the schema only (demo, fixture objects, parse-coverage tables),
 * owned by the app role (created when missing), and no rows.
 */
export async function createSchemaDatabase(server: PgServer, db: string): Promise<void> {
  const admin = await client(server, 'postgres', false);
  try {
    await ensureDemoAppRole(admin);
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(db)} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(db)} OWNER ${DEMO_APP_ROLE}`);
  } finally {
    await admin.end();
  }
  const app = await client(server, db, true);
  try {
    await app.query(fs.readFileSync(path.join(DEMO_DIR, 'schema.sql'), 'utf8'));
    await app.query(fixtureSql());
    // One by one: a relation of the fixture may refuse a column (a partition takes its parent's).
    for (const ddl of await parseCoverageDdl()) await app.query(ddl).catch(() => undefined);
  } finally {
    await app.end();
  }
}

/** A client of `database` as the app role (`asApp`) or the superuser. */
export function connectTo(server: PgServer, database: string, asApp: boolean): Promise<pg.Client> {
  return client(server, database, asApp);
}

/**
 * (Re)creates `<prefix>_tmpl` with the schema (demo, fixture objects, parse-coverage tables) and
 * `<prefix>_a|b|c` copied from it, owned by the app role, each loaded with its rows.
 */
export async function createNoninterferenceDatabases(server: PgServer, prefix: string): Promise<void> {
  checkVariants();
  const tmpl = `${prefix}_tmpl`;
  const admin = await client(server, 'postgres', false);
  try {
    for (const db of SIDES.map((s) => dbName(prefix, s))) {
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(db)} WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
  await createSchemaDatabase(server, tmpl);
  const admin2 = await client(server, 'postgres', false);
  try {
    for (const side of SIDES) {
      await admin2.query(
        `CREATE DATABASE ${pg.escapeIdentifier(dbName(prefix, side))} TEMPLATE ${pg.escapeIdentifier(tmpl)} OWNER ${DEMO_APP_ROLE}`,
      );
    }
  } finally {
    await admin2.end();
  }
  for (const side of SIDES) {
    const app = await client(server, dbName(prefix, side), true);
    try {
      await app.query(dataSql(side === 'b' ? 1 : 0));
    } finally {
      await app.end();
    }
  }
}
