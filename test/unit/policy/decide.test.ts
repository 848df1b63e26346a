// decide() on hand-built analyses: seed 004's sentences and DESIGN.md "Decision", one test each.
import { describe, expect, test } from 'vitest';
import { decide } from '../../../src/policy/decide.js';
import type { Decision, StatementDecision } from '../../../src/policy/decision-types.js';
import {
  analysisOf,
  columnReq,
  denySee,
  makeConfig,
  manageReq,
  output,
  ref,
  resultCol,
  smallCatalog,
  stmt,
  tableReq,
} from './policy-fixtures.js';

const catalog = smallCatalog();

const allowAll = {
  effect: 'allow',
  actions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'SEE'],
  database: 'demo',
};
const config = makeConfig({
  roles: {
    reader: { permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' }] },
    writer: { permissions: [allowAll] },
    nomanage: { permissions: [{ effect: 'deny', actions: ['MANAGE'], database: 'demo' }] },
    dba: {
      permissions: [
        {
          effect: 'allow',
          actions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'MANAGE', 'SEE'],
          database: '*',
        },
      ],
    },
    analyst: {
      permissions: [
        { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
        denySee('public.users.email'),
        denySee('public.users.ssn'),
      ],
    },
    nossn: {
      permissions: [
        { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
        {
          effect: 'deny',
          actions: ['SELECT'],
          database: 'demo',
          schema: 'public',
          table: 'users',
          column: 'ssn',
        },
      ],
    },
    t1only: {
      permissions: [
        { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo', schema: 'public', table: 't1' },
      ],
    },
    selectonly: { permissions: [{ effect: 'allow', actions: ['SELECT'], database: 'demo' }] },
  },
});

function run(
  s: ReturnType<typeof stmt>,
  roles: string[],
  over: Partial<{ database: string; connection: 'local' | 'proxified' | 'mcp' }> = {},
): Decision {
  return decide(analysisOf(s), roles, {
    config,
    catalog,
    database: over.database ?? 'demo',
    connection: over.connection ?? 'proxified',
  });
}

function only(d: Decision): StatementDecision {
  expect(d.statements).toHaveLength(1);
  return d.statements[0]!;
}

const selectEmail = stmt({
  requirements: [tableReq('SELECT', 'public.users', 24), columnReq('SELECT', 'public.users.email', 7)],
  uses: [output('public.users.email', 0)],
  resultColumns: [resultCol('email', 'public.users.email')],
});

describe('allow and deny (seed 004)', () => {
  test('deny always wins: if one role allows an action and another denies it, the action is denied', () => {
    const s = stmt({ kind: 'MANAGE', requirements: [manageReq('DROP TABLE')] });
    expect(only(run(s, ['dba'])).verdict).toBe('allow');
    const d = run(s, ['dba', 'nomanage']);
    expect(d.refusal?.sqlstate).toBe('42501');
    expect(d.refusal?.rule).toMatchObject({ role: 'nomanage', index: 0, effect: 'deny' });
    expect(d.refusal?.message).toBe(
      'permission denied for database demo: DROP TABLE needs MANAGE, and it is denied to you',
    );
    expect(d.refusal?.detail).toContain('roles.nomanage.permissions[0] (deny MANAGE on demo)');
    // Order of roles does not matter.
    expect(run(s, ['nomanage', 'dba']).refusal?.rule?.role).toBe('nomanage');
  });

  test('a user with Developer (allow all) and Intern (deny MANAGE on prod) cannot change the schema on prod', () => {
    const s = stmt({ kind: 'MANAGE', requirements: [manageReq('ALTER TABLE')] });
    expect(run(s, ['dba', 'nomanage']).refusal).toBeDefined();
    expect(only(run(s, ['dba', 'nomanage'], { database: 'other' })).verdict).toBe('allow');
  });

  test('if neither matches, access is refused (default deny)', () => {
    const d = run(stmt({ kind: 'MANAGE', requirements: [manageReq('CREATE TABLE')] }), ['reader']);
    expect(d.refusal?.sqlstate).toBe('42501');
    expect(d.refusal?.rule).toBeUndefined();
    expect(d.refusal?.message).toBe(
      'permission denied for database demo: CREATE TABLE needs MANAGE, and no rule of your roles allows it',
    );
    expect(d.refusal?.detail).toBe(
      'Your role: reader. No rule of it allows MANAGE on demo, and nothing is allowed by default.',
    );
    // A role with no rule at all, and roles that do not exist, grant nothing.
    expect(run(selectEmail, ['nomanage']).refusal?.message).toBe(
      'permission denied for table users: no rule of your roles allows SELECT on it',
    );
    expect(run(selectEmail, ['ghost']).refusal).toBeDefined();
  });

  test('a deny is checked before allows, whatever the order of rules in a role', () => {
    const c = makeConfig({
      roles: {
        r: {
          permissions: [
            { effect: 'allow', actions: ['SELECT'], database: 'demo' },
            { effect: 'deny', actions: ['SELECT'], database: '*' },
          ],
        },
      },
    });
    const d = decide(analysisOf(selectEmail), ['r'], {
      config: c,
      catalog,
      database: 'demo',
      connection: 'local',
    });
    expect(d.refusal?.rule).toMatchObject({ index: 1, effect: 'deny', scope: '*' });
  });
});

describe('levels and scope (seed 004)', () => {
  test('granting access at the database level covers all schemas, tables and columns inside it', () => {
    const s = stmt({
      requirements: [
        tableReq('SELECT', 'public.users'),
        columnReq('SELECT', 'public.users.name'),
        tableReq('SELECT', 'sales.orders'),
        columnReq('SELECT', 'sales.orders.note'),
      ],
      uses: [output('public.users.name', 0), output('sales.orders.note', 1)],
      resultColumns: [resultCol('name', 'public.users.name'), resultCol('note', 'sales.orders.note')],
    });
    const d = only(run(s, ['reader']));
    expect(d).toMatchObject({ verdict: 'allow', mask: [], redactErrors: false });
    expect(d.checks.every((c) => c.granted && c.rule?.scope === 'demo')).toBe(true);
  });

  test('a database-level grant does not reach another database', () => {
    expect(run(selectEmail, ['reader'], { database: 'other' }).refusal?.message).toMatch(/table users/);
  });

  test('`*` matches any database', () => {
    expect(only(run(selectEmail, ['dba'], { database: 'other' })).verdict).toBe('allow');
  });

  test('a table-level grant covers the table and its columns, and nothing else', () => {
    const t1 = stmt({
      requirements: [tableReq('SELECT', 'public.t1'), columnReq('SELECT', 'public.t1.c2')],
      uses: [output('public.t1.c2', 0)],
      resultColumns: [resultCol('c2', 'public.t1.c2')],
    });
    expect(only(run(t1, ['t1only'])).verdict).toBe('allow');
    expect(run(selectEmail, ['t1only']).refusal).toBeDefined();
  });

  test('a deny on one column under a database-wide allow: SELECT on that column is refused, the rest allowed', () => {
    const ssn = stmt({
      requirements: [tableReq('SELECT', 'public.users', 21), columnReq('SELECT', 'public.users.ssn', 7)],
      uses: [output('public.users.ssn', 0)],
      resultColumns: [resultCol('ssn', 'public.users.ssn')],
    });
    const d = run(ssn, ['nossn']);
    expect(d.refusal).toMatchObject({
      sqlstate: '42501',
      message: 'permission denied for column users.ssn: SELECT is denied to you',
      position: 8,
      rule: { role: 'nossn', index: 1 },
    });
    expect(only(run(selectEmail, ['nossn'])).verdict).toBe('allow');
  });

  test('a column-level deny SELECT refuses any statement that references the column, in any use', () => {
    const whereSsn = stmt({
      requirements: [
        tableReq('SELECT', 'public.users'),
        columnReq('SELECT', 'public.users.id'),
        columnReq('SELECT', 'public.users.ssn', 30),
      ],
      uses: [
        output('public.users.id', 0),
        { use: 'test', clause: 'WHERE', location: 30, ...ref('public.users.ssn') },
      ],
      resultColumns: [resultCol('id', 'public.users.id')],
    });
    expect(run(whereSsn, ['nossn']).refusal?.message).toBe(
      'permission denied for column users.ssn: SELECT is denied to you',
    );
  });

  test('a deny on one column under a database-wide allow, for SEE: that column is masked, the rest seen', () => {
    const s = stmt({
      requirements: [
        tableReq('SELECT', 'public.users'),
        columnReq('SELECT', 'public.users.id'),
        columnReq('SELECT', 'public.users.email'),
      ],
      uses: [output('public.users.id', 0), output('public.users.email', 1)],
      resultColumns: [resultCol('id', 'public.users.id'), resultCol('email', 'public.users.email')],
    });
    const d = only(run(s, ['analyst']));
    expect(d).toMatchObject({ verdict: 'allow', mask: [1], redactErrors: true });
    const see = d.checks.filter((c) => c.action === 'SEE');
    expect(see).toEqual([
      {
        action: 'SEE',
        object: 'demo.public.users.id',
        granted: true,
        rule: expect.objectContaining({ index: 0 }),
      },
      {
        action: 'SEE',
        object: 'demo.public.users.email',
        granted: false,
        rule: expect.objectContaining({ index: 1, effect: 'deny' }),
      },
    ]);
  });

  test('no rule means no SEE: a role with SELECT only gets every column masked', () => {
    const d = only(run(selectEmail, ['selectonly']));
    expect(d).toMatchObject({ verdict: 'allow', mask: [0], redactErrors: true });
  });

  test('a column-scoped allow covers naming its table, a column-scoped deny does not deny the table', () => {
    const c = makeConfig({
      roles: {
        r: {
          permissions: [
            {
              effect: 'allow',
              actions: ['SELECT', 'SEE'],
              database: 'demo',
              schema: 'public',
              table: 'users',
              column: 'name',
            },
          ],
        },
      },
    });
    const nameOnly = stmt({
      requirements: [tableReq('SELECT', 'public.users'), columnReq('SELECT', 'public.users.name')],
      uses: [output('public.users.name', 0)],
      resultColumns: [resultCol('name', 'public.users.name')],
    });
    const ctx = { config: c, catalog, database: 'demo', connection: 'proxified' as const };
    expect(only(decide(analysisOf(nameOnly), ['r'], ctx)).verdict).toBe('allow');
    expect(decide(analysisOf(selectEmail), ['r'], ctx).refusal?.message).toBe(
      'permission denied for column users.email: no rule of your roles allows SELECT on it',
    );
  });
});

describe('statements that need several permissions (seed 004)', () => {
  const ctas = stmt({
    kind: 'MANAGE',
    nodeType: 'CreateTableAsStmt',
    requirements: [
      manageReq('CREATE TABLE AS'),
      tableReq('SELECT', 'public.t1', 30),
      columnReq('SELECT', 'public.t1.c1', 20),
    ],
    uses: [{ use: 'compute', context: 'CREATE TABLE AS', location: 20, ...ref('public.t1.c1') }],
  });

  test('CREATE TABLE new AS SELECT * FROM old needs MANAGE and SELECT on old', () => {
    expect(only(run(ctas, ['dba'])).verdict).toBe('allow');
    expect(run(ctas, ['reader']).refusal?.message).toMatch(/CREATE TABLE AS needs MANAGE/);
    const manageOnly = makeConfig({
      roles: { m: { permissions: [{ effect: 'allow', actions: ['MANAGE', 'SEE'], database: 'demo' }] } },
    });
    const d = decide(analysisOf(ctas), ['m'], {
      config: manageOnly,
      catalog,
      database: 'demo',
      connection: 'proxified',
    });
    expect(d.refusal?.message).toBe(
      'permission denied for table t1: no rule of your roles allows SELECT on it',
    );
  });

  test('a view over a table needs MANAGE and SELECT on the table', () => {
    const view = stmt({
      kind: 'MANAGE',
      nodeType: 'ViewStmt',
      requirements: [
        manageReq('CREATE VIEW'),
        tableReq('SELECT', 'public.t2'),
        columnReq('SELECT', 'public.t2.c1'),
      ],
      uses: [{ use: 'compute', context: 'CREATE VIEW', location: 20, ...ref('public.t2.c1') }],
    });
    expect(only(run(view, ['dba'])).verdict).toBe('allow');
    expect(run(view, ['reader']).refusal).toBeDefined();
    expect(run(view, ['t1only']).refusal).toBeDefined();
  });

  test('SELECT t1.c2 FROM t1, t2 needs SELECT on t2 as well as on t1', () => {
    const s = stmt({
      requirements: [
        tableReq('SELECT', 'public.t1', 15),
        tableReq('SELECT', 'public.t2', 19),
        columnReq('SELECT', 'public.t1.c2', 7),
      ],
      uses: [output('public.t1.c2', 0)],
      resultColumns: [resultCol('c2', 'public.t1.c2')],
    });
    expect(only(run(s, ['reader'])).verdict).toBe('allow');
    const d = run(s, ['t1only']);
    expect(d.refusal).toMatchObject({
      message: 'permission denied for table t2: no rule of your roles allows SELECT on it',
      position: 20,
    });
  });

  test('an UPDATE that reads a second table needs UPDATE on the first and SELECT on the second', () => {
    const s = stmt({
      kind: 'UPDATE',
      requirements: [
        tableReq('UPDATE', 'public.t1'),
        columnReq('UPDATE', 'public.t1.c1'),
        tableReq('SELECT', 'public.t2'),
        columnReq('SELECT', 'public.t2.c1'),
      ],
      uses: [
        { use: 'write-target', location: 15, ...ref('public.t1.c1') },
        { use: 'compute', context: 'UPDATE SET', location: 20, ...ref('public.t2.c1') },
      ],
    });
    expect(only(run(s, ['writer'])).verdict).toBe('allow');
    expect(run(s, ['reader']).refusal?.message).toBe(
      'permission denied for table t1: no rule of your roles allows UPDATE on it',
    );
  });

  test('session control needs no permission', () => {
    const s = stmt({ kind: 'SESSION', nodeType: 'TransactionStmt', sessionEffects: [{ kind: 'begin' }] });
    expect(only(run(s, ['nomanage']))).toEqual({
      verdict: 'allow',
      mask: [],
      redactErrors: false,
      checks: [],
    });
  });

  test('analysis refusals pass through as the refusal, position made 1-based', () => {
    const d = decide(
      {
        statements: [],
        refusal: { sqlstate: '42601', message: 'syntax error at or near "selec"', location: 0 },
      },
      ['dba'],
      { config, catalog, database: 'demo', connection: 'proxified' },
    );
    expect(d).toEqual({
      statements: [],
      refusal: { sqlstate: '42601', message: 'syntax error at or near "selec"', position: 1 },
    });
    const s = {
      ...stmt({}),
      refusal: { sqlstate: '42703', message: 'column "nope" does not exist', location: 7 },
    };
    expect(run(s, ['dba']).refusal).toEqual({
      sqlstate: '42703',
      message: 'column "nope" does not exist',
      position: 8,
    });
  });

  test('one refused statement refuses the string; the first refusal is reported', () => {
    const ok = stmt({ kind: 'SESSION', sessionEffects: [{ kind: 'begin' }] });
    const bad = stmt({ kind: 'MANAGE', requirements: [manageReq('DROP TABLE')] });
    const d = decide(analysisOf(ok, bad, selectEmail), ['reader'], {
      config,
      catalog,
      database: 'demo',
      connection: 'proxified',
    });
    expect(d.statements.map((s) => s.verdict)).toEqual(['allow', 'refuse', 'allow']);
    expect(d.refusal?.message).toMatch(/DROP TABLE/);
  });
});

describe('SEE per column use (seed 004 "Hiding a column", DESIGN.md "Decision" step 2)', () => {
  const base = [tableReq('SELECT', 'public.users'), columnReq('SELECT', 'public.users.email', 27)];

  test('a statement that tests a hidden column is refused, naming the column and the clause', () => {
    const s = stmt({
      requirements: [...base, columnReq('SELECT', 'public.users.id', 7)],
      uses: [
        output('public.users.id', 0),
        { use: 'test', clause: 'WHERE', location: 27, ...ref('public.users.email') },
      ],
      resultColumns: [resultCol('id', 'public.users.id')],
    });
    const d = run(s, ['analyst']);
    expect(d.refusal).toEqual({
      sqlstate: '42501',
      message: 'column users.email is hidden from you and cannot be tested in WHERE',
      detail:
        'Your role: analyst. Rule roles.analyst.permissions[1] (deny SEE on demo.public.users.email) denies SEE on demo.public.users.email; a deny always wins.',
      hint: 'To ask only whether rows exist, write EXISTS (SELECT 1 FROM …) without email; testing its values needs SEE on it.',
      position: 28,
      rule: { role: 'analyst', index: 1, effect: 'deny', scope: 'demo.public.users.email' },
      column: 'public.users.email',
    });
  });

  for (const clause of [
    'GROUP BY',
    'ORDER BY',
    'HAVING',
    'JOIN ON',
    'JOIN USING',
    'NATURAL JOIN',
    'WINDOW',
    'FILTER',
    'DISTINCT',
    'ON CONFLICT',
    'SET OPERATION',
  ] as const) {
    test(`${clause} asks a question about the values and is refused on the same terms as WHERE`, () => {
      const s = stmt({
        requirements: base,
        uses: [{ use: 'test', clause, location: 27, ...ref('public.users.email') }],
      });
      expect(run(s, ['analyst']).refusal?.message).toMatch(
        /^column users\.email is hidden from you and cannot be tested in /,
      );
      expect(only(run(s, ['reader'])).verdict).toBe('allow');
    });
  }

  test('an expression over a hidden column is refused (compute), naming where it is read', () => {
    const s = stmt({
      requirements: base,
      uses: [{ use: 'compute', context: 'function lower', location: 13, ...ref('public.users.email') }],
      resultColumns: [resultCol('lower', null)],
    });
    expect(run(s, ['analyst']).refusal).toMatchObject({
      message: 'column users.email is hidden from you and cannot be read in function lower',
      position: 14,
    });
  });

  test('a write that reads a hidden column is refused rather than masked (INSERT … SELECT)', () => {
    const s = stmt({
      kind: 'INSERT',
      requirements: [tableReq('INSERT', 'public.t1'), columnReq('INSERT', 'public.t1.c1'), ...base],
      uses: [
        { use: 'write-target', location: 15, ...ref('public.t1.c1') },
        { use: 'compute', context: 'INSERT … SELECT', location: 30, ...ref('public.users.email') },
      ],
    });
    const c = makeConfig({
      roles: {
        w: {
          permissions: [allowAll, denySee('public.users.email')],
        },
      },
    });
    const d = decide(analysisOf(s), ['w'], { config: c, catalog, database: 'demo', connection: 'proxified' });
    expect(d.refusal?.message).toBe(
      'column users.email is hidden from you and cannot be read in INSERT … SELECT',
    );
  });

  test('writing to a hidden column is not reading it, and stays allowed', () => {
    const s = stmt({
      kind: 'UPDATE',
      requirements: [tableReq('UPDATE', 'public.users'), columnReq('UPDATE', 'public.users.email')],
      uses: [{ use: 'write-target', location: 17, ...ref('public.users.email') }],
    });
    const c = makeConfig({
      roles: {
        w: {
          permissions: [allowAll, denySee('public.users.email'), denySee('public.users.ssn')],
        },
      },
    });
    const ctx = { config: c, catalog, database: 'demo', connection: 'proxified' as const };
    expect(only(decide(analysisOf(s), ['w'], ctx))).toMatchObject({ verdict: 'allow', redactErrors: true });

    // Writes as reads: a hidden column under a unique constraint answers "does this value exist".
    const ssn = stmt({
      kind: 'INSERT',
      requirements: [tableReq('INSERT', 'public.users'), columnReq('INSERT', 'public.users.ssn')],
      uses: [{ use: 'write-target', location: 22, ...ref('public.users.ssn') }],
    });
    expect(decide(analysisOf(ssn), ['w'], ctx).refusal).toMatchObject({
      sqlstate: '42501',
      message:
        'column users.ssn is hidden from you and cannot be written: it is under a unique constraint, so the write would tell whether a value exists',
      position: 23,
    });
  });

  test('RETURNING rows are masked like any others', () => {
    const s = stmt({
      kind: 'UPDATE',
      requirements: [tableReq('UPDATE', 'public.users'), columnReq('UPDATE', 'public.users.name')],
      uses: [
        { use: 'write-target', location: 17, ...ref('public.users.name') },
        output('public.users.email', 0, 50),
      ],
      resultColumns: [resultCol('email', 'public.users.email')],
    });
    const c = makeConfig({
      roles: {
        w: {
          permissions: [allowAll, denySee('public.users.email')],
        },
      },
    });
    expect(
      only(decide(analysisOf(s), ['w'], { config: c, catalog, database: 'demo', connection: 'local' })),
    ).toMatchObject({
      verdict: 'allow',
      mask: [0],
    });
  });

  test('a whole-row use of a table with any hidden column is refused', () => {
    const s = stmt({
      requirements: [tableReq('SELECT', 'public.users')],
      uses: [{ use: 'whole-row', schema: 'public', table: 'users', location: 7 }],
      resultColumns: [resultCol('u', null)],
    });
    expect(run(s, ['analyst']).refusal).toMatchObject({
      message:
        'table users has columns hidden from you (email, ssn, email_lower) and cannot be used as a whole row',
      position: 8,
    });
    expect(only(run(s, ['reader'])).verdict).toBe('allow');
  });

  test('a generated column computed from a hidden column is hidden too', () => {
    const s = stmt({
      requirements: [tableReq('SELECT', 'public.users'), columnReq('SELECT', 'public.users.email_lower')],
      uses: [output('public.users.email_lower', 0)],
      resultColumns: [resultCol('email_lower', 'public.users.email_lower')],
    });
    const d = only(run(s, ['analyst']));
    expect(d).toMatchObject({ verdict: 'allow', mask: [0] });
    const tested = stmt({
      requirements: s.requirements,
      uses: [{ use: 'test', clause: 'WHERE', location: 30, ...ref('public.users.email_lower') }],
    });
    expect(run(tested, ['analyst']).refusal?.detail).toMatch(
      /^Column users\.email_lower is generated from users\.email, which is hidden\. Your role: analyst\./,
    );
  });

  test('a literal, a count or a window function beside a hidden column is not refused', () => {
    const s = stmt({
      requirements: base,
      uses: [output('public.users.email', 1)],
      resultColumns: [
        resultCol('?column?', null),
        resultCol('email', 'public.users.email'),
        resultCol('count', null),
      ],
    });
    expect(only(run(s, ['analyst']))).toMatchObject({ verdict: 'allow', mask: [1] });
  });

  test('a result column traced to a hidden column is masked even without its output use (defence in depth)', () => {
    const s = stmt({ requirements: base, resultColumns: [resultCol('email', 'public.users.email')] });
    expect(only(run(s, ['analyst']))).toMatchObject({ verdict: 'allow', mask: [0] });
  });

  test('redactErrors only when the statement touches a table with a column hidden from the caller', () => {
    const t1 = stmt({
      requirements: [tableReq('SELECT', 'public.t1'), columnReq('SELECT', 'public.t1.c1')],
      uses: [output('public.t1.c1', 0)],
      resultColumns: [resultCol('c1', 'public.t1.c1')],
    });
    expect(only(run(t1, ['analyst']))).toMatchObject({ redactErrors: false });
    const names = stmt({
      requirements: [tableReq('SELECT', 'public.users'), columnReq('SELECT', 'public.users.name')],
      uses: [output('public.users.name', 0)],
      resultColumns: [resultCol('name', 'public.users.name')],
    });
    expect(only(run(names, ['analyst']))).toMatchObject({ mask: [], redactErrors: true });
    expect(only(run(names, ['reader']))).toMatchObject({ redactErrors: false });
  });

  test('PREPARE decides the statement it holds: its refusal refuses PREPARE, its mask is kept', () => {
    const inner = stmt({
      requirements: base,
      uses: [output('public.users.email', 0)],
      resultColumns: [resultCol('email', 'public.users.email')],
    });
    const prep = stmt({ requirements: base, sessionEffects: [{ kind: 'prepare', name: 'p', inner }] });
    const d = only(run(prep, ['analyst']));
    expect(d.verdict).toBe('allow');
    expect(d.verdict === 'allow' && d.prepared).toMatchObject({ verdict: 'allow', mask: [0] });
    const innerBad = stmt({
      requirements: base,
      uses: [{ use: 'test', clause: 'WHERE', location: 40, ...ref('public.users.email') }],
    });
    const bad = stmt({
      requirements: base,
      sessionEffects: [{ kind: 'declare-cursor', name: 'c', inner: innerBad }],
    });
    expect(run(bad, ['analyst']).refusal?.message).toMatch(/cannot be tested in WHERE/);
  });
});

describe('databases nobody has written a rule for (seed 004), per statement', () => {
  const c = makeConfig({
    mode: 'local',
    roles: { r: { permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' }] } },
  });
  const s = stmt({ kind: 'MANAGE', requirements: [manageReq('DROP TABLE')] });

  test('local: allowed, unmasked', () => {
    expect(
      only(decide(analysisOf(s), ['r'], { config: c, catalog, database: 'other', connection: 'local' })),
    ).toEqual({
      verdict: 'allow',
      mask: [],
      redactErrors: false,
      checks: [],
    });
  });

  for (const connection of ['proxified', 'mcp'] as const) {
    test(`${connection}: refused`, () => {
      const d = decide(analysisOf(selectEmail), ['r'], { config: c, catalog, database: 'other', connection });
      expect(d.refusal).toMatchObject({
        sqlstate: '42501',
        message: 'permission denied for database "other"',
      });
    });
  }

  test('a ruled database is decided by its rules even on a local connection (default deny holds)', () => {
    expect(
      decide(analysisOf(s), ['r'], { config: c, catalog, database: 'demo', connection: 'local' }).refusal,
    ).toBeDefined();
  });
});
