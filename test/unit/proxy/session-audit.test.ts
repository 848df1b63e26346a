// A session's audit lines: byte for byte what pino writes for the same fields, put together without pino's per-call work where the logger allows it.
import pino, { type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { AuditLog, auditFragment, type StatementAuditFields } from '../../../src/proxy/audit.js';

/** A pino logger writing to memory, with a fixed clock so lines compare as strings. */
function memoryLogger(opts: pino.LoggerOptions = {}): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level: 'info', base: undefined, timestamp: () => ',"time":1700000000000', ...opts },
    { write: (s: string) => lines.push(s) },
  );
  return { logger, lines };
}

const SESSION = { conn: 7, identity: 'u/ana', login: 'pgwarden_set_ab', database: 'bench' } as const;
const ROLES = ['analyst', 'viewer'];
const PATH = ['"$user"', 'public'];

/** The line pino itself writes for these fields (AuditLog.write: the same fields in the same order). */
function pinoLine(e: StatementAuditFields, epoch: string, opts: pino.LoggerOptions = {}): string {
  const { logger, lines } = memoryLogger(opts);
  const { conn, identity, login, database } = SESSION;
  logger
    .child({ audit: true, conn, identity, login, roles: ROLES, database, searchPath: PATH, epoch })
    .info(e, 'statement');
  return lines[0] as string;
}

const STATEMENTS: StatementAuditFields[] = [
  {
    kind: 'SELECT',
    sql: 'SELECT abalance FROM pgbench_accounts WHERE aid = $1',
    decision: 'allowed',
    durationMs: 0.123,
    rows: 1,
  },
  {
    kind: 'SELECT',
    sql: 'SELECT "we""ird", é, \u2028 FROM t\nWHERE x = $1 -- "\\"',
    decision: 'masked',
    masked: ['email', 'ssn'],
    durationMs: 12,
  },
  {
    kind: 'UPDATE',
    sql: 'UPDATE t SET a = $1',
    decision: 'refused',
    reason: 'permission denied for column "a"',
    sqlstate: '42501',
    rule: 'roles.analyst.permissions[2]',
  },
  { kind: 'SELECT', sql: 'SELECT 1', decision: 'allowed', durationMs: Number.NaN },
];

describe('SessionAudit', () => {
  it('writes, for every kind of statement line, exactly the string pino writes', () => {
    const { logger, lines } = memoryLogger();
    const session = new AuditLog(logger, () => 'epoch-1').session(SESSION);
    for (const e of STATEMENTS) session.write(ROLES, PATH, e);
    expect(lines).toEqual(STATEMENTS.map((e) => pinoLine(e, 'epoch-1')));
    // And each is one JSON object per line with the fields as given.
    const parsed = JSON.parse(lines[1] as string);
    expect(parsed).toMatchObject({
      audit: true,
      conn: 7,
      roles: ROLES,
      searchPath: PATH,
      masked: ['email', 'ssn'],
    });
    expect(parsed.sql).toBe(STATEMENTS[1]?.sql);
    expect(JSON.parse(lines[3] as string).durationMs).toBeNull();
  });

  it('writes a statement that ran from its fragment (serialized once) as pino writes the same fields', () => {
    const { logger, lines } = memoryLogger();
    const session = new AuditLog(logger, () => 'epoch-1').session(SESSION);
    const plain = auditFragment({
      kind: 'SELECT',
      sql: 'SELECT abalance FROM a WHERE aid = $1',
      decision: 'allowed',
    });
    const masked = auditFragment({
      kind: 'SELECT',
      sql: 'SELECT "é\n" FROM t',
      decision: 'masked',
      masked: ['email'],
    });
    session.ran(ROLES, PATH, plain, 0.042, 1);
    session.ran(ROLES, PATH, masked, 3, undefined);
    session.ran(['viewer'], PATH, plain, Number.POSITIVE_INFINITY, 0);
    expect(lines[0]).toBe(pinoLine({ ...plain.fields, durationMs: 0.042, rows: 1 }, 'epoch-1'));
    expect(lines[1]).toBe(pinoLine({ ...masked.fields, durationMs: 3 }, 'epoch-1'));
    expect(JSON.parse(lines[1] as string).masked).toEqual(['email']);
    expect(JSON.parse(lines[2] as string)).toMatchObject({ roles: ['viewer'], durationMs: null, rows: 0 });
    // A logger pino must write for: the same fields through it.
    const m = memoryLogger({ mixin: () => ({ host: 'h1' }) });
    new AuditLog(m.logger, () => 'epoch-1').session(SESSION).ran(ROLES, PATH, plain, 1, 2);
    expect(JSON.parse(m.lines[0] as string)).toMatchObject({
      host: 'h1',
      sql: plain.fields.sql,
      durationMs: 1,
      rows: 2,
    });
  });

  it('serializes the session fields again when the roles, the path or the epoch change', () => {
    const { logger, lines } = memoryLogger();
    let epoch = 'epoch-1';
    const session = new AuditLog(logger, () => epoch).session(SESSION);
    const e = STATEMENTS[0] as StatementAuditFields;
    session.write(ROLES, PATH, e);
    epoch = 'epoch-2';
    session.write(['viewer'], ['public'], e);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      epoch: 'epoch-1',
      roles: ROLES,
      searchPath: PATH,
    });
    expect(JSON.parse(lines[1] as string)).toMatchObject({
      epoch: 'epoch-2',
      roles: ['viewer'],
      searchPath: ['public'],
    });
  });

  it('leaves the line to pino when the logger changes lines (a mixin, redaction), and writes nothing below info', () => {
    const e = STATEMENTS[2] as StatementAuditFields;
    const mixin = { mixin: () => ({ host: 'h1' }) };
    const a = memoryLogger(mixin);
    new AuditLog(a.logger, () => 'epoch-1').session(SESSION).write(ROLES, PATH, e);
    expect(a.lines).toEqual([pinoLine(e, 'epoch-1', mixin)]);
    expect(JSON.parse(a.lines[0] as string).host).toBe('h1');

    const redact = { redact: ['reason'] };
    const b = memoryLogger(redact);
    new AuditLog(b.logger, () => 'epoch-1').session(SESSION).write(ROLES, PATH, e);
    expect(JSON.parse(b.lines[0] as string).reason).toBe('[Redacted]');

    const quiet = memoryLogger({ level: 'warn' });
    const session = new AuditLog(quiet.logger, () => 'epoch-1').session(SESSION);
    session.write(ROLES, PATH, e);
    expect(quiet.lines).toEqual([]);
  });
});
