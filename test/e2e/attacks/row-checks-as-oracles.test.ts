// Writes whose success or row count the server decides over a hidden column of every row they change: user triggers, RLS policies, rules, NOT VALID CHECKs, partition keys, generated columns.
import { describe, expect, test } from 'vitest';
import { inRollback } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

// Attack findings (all walls on): each pair below is one statement on two rows that differ only in
// their hidden ssn; before the fix bob got a different answer for each (ok / 23514, ok / P0001,
// ok / 42501 from Postgres's RLS check, ok / 23514 no partition), so the write answered a
// question about the hidden value. The analysis refused writes under constraints only when the
// statement wrote a column the constraint reads; these run whatever columns the write names.
const fx = useProxyFixture({
  users: ['bob'],
  setup: `
    drop schema if exists atk_rowchk cascade;
    create schema atk_rowchk;
    create table atk_rowchk.nv (id int primary key, name text, ssn text);
    insert into atk_rowchk.nv values (1, 'a', '901'), (2, 'b', '802');
    alter table atk_rowchk.nv add constraint nv_ssn check (ssn like '9%') not valid;
    create table atk_rowchk.nv2 (id int primary key, name text, status text, ssn text);
    insert into atk_rowchk.nv2 values (1, 'a', 'new', '901');
    create table atk_rowchk.trg (id int primary key, status text, ssn text);
    insert into atk_rowchk.trg values (1, 'new', '901'), (2, 'new', null);
    create function atk_rowchk.trg_check() returns trigger language plpgsql as $$
      begin if new.status = 'verified' and new.ssn is null then raise exception 'ssn required'; end if; return new; end $$;
    create trigger trg_check before update on atk_rowchk.trg for each row execute function atk_rowchk.trg_check();
    create table atk_rowchk.trg_ins (id int primary key, status text, ssn text);
    create trigger trg_ins before insert on atk_rowchk.trg_ins for each row execute function atk_rowchk.trg_check();
    create table atk_rowchk.rls (id int primary key, status text, ssn text);
    insert into atk_rowchk.rls values (1, 'new', '901'), (2, 'new', null);
    alter table atk_rowchk.rls enable row level security;
    alter table atk_rowchk.rls force row level security;
    create policy p_read on atk_rowchk.rls for select using (true);
    create policy p_write on atk_rowchk.rls for update using (true) with check (status <> 'verified' or ssn is not null);
    create table atk_rowchk.pt (id int, k int, ssn int) partition by range (k, ssn);
    create table atk_rowchk.pt1 partition of atk_rowchk.pt for values from (0, 0) to (10, 500);
    insert into atk_rowchk.pt values (1, 5, 100), (2, 5, 600);
    create table atk_rowchk.gen (id int primary key, name text, ssn int, other int,
                                 g int generated always as (length(name) / ssn) stored);
    insert into atk_rowchk.gen values (1, null, 0), (2, null, 5);
    create table atk_rowchk.rul (id int primary key, name text, ssn text);
    insert into atk_rowchk.rul values (1, 'a', '901'), (2, 'b', '802');
    create rule r_upd as on update to atk_rowchk.rul where old.ssn like '9%' do instead nothing;
    create table atk_rowchk.rul_ins (id int primary key, name text);
    create rule r_ins as on insert to atk_rowchk.rul_ins
      where exists (select 1 from atk_rowchk.nv n where n.ssn = new.name) do instead nothing;
    create table atk_rowchk.rul2 (id int primary key, name text, ssn text);
    insert into atk_rowchk.rul2 values (1, 'a', '901'), (2, 'b', '802');
  `,
  hidden: [
    { schema: 'atk_rowchk', table: 'nv', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'nv2', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'trg', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'trg_ins', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'rls', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'pt', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'gen', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'rul', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'rul2', column: 'ssn' },
  ],
  teardown: 'drop schema if exists atk_rowchk cascade',
});

/** bob's answers to `sql` on row 1 and row 2 (each in a rolled-back transaction). */
async function onBoth(sql: string): Promise<[string, string]> {
  const a = await inRollback(fx.users.bob, sql.replace('$id', '1'));
  const b = await inRollback(fx.users.bob, sql.replace('$id', '2'));
  return [a.code, b.code];
}

describe('a write the server checks over a hidden column of every row it changes is refused', () => {
  test('a CHECK constraint added NOT VALID: any UPDATE of the row re-checks it', async () => {
    expect(await onBoth("update atk_rowchk.nv set name = 'x' where id = $id")).toEqual(['42501', '42501']);
    const r = await fx.users.bob.query("update atk_rowchk.nv set name = 'x' where id = 1").catch((e) => e);
    expect(r.message).toBe(
      "rows of atk_rowchk.nv cannot be updated: the CHECK constraint nv_ssn, added NOT VALID, reads ssn, and stored rows may fail it; ssn is hidden from you, so the update's success or row count would tell something about its values",
    );
    // A plain INSERT checks only the caller's own row.
    expect((await inRollback(fx.users.bob, "insert into atk_rowchk.nv values (3, 'c', '9')")).code).toBe(
      'ok',
    );
  });

  test('a user trigger gets the whole row: UPDATE and ON CONFLICT DO UPDATE', async () => {
    expect(await onBoth("update atk_rowchk.trg set status = 'verified' where id = $id")).toEqual([
      '42501',
      '42501',
    ]);
    expect(
      await onBoth(
        "insert into atk_rowchk.trg values ($id, 'verified', null) on conflict (id) do update set status = 'verified'",
      ),
    ).toEqual(['42501', '42501']);
    const r = await fx.users.bob.query("update atk_rowchk.trg set status = 'x' where id = 1").catch((e) => e);
    expect(r.message).toMatch(
      /^rows of atk_rowchk.trg cannot be updated: the trigger trg_check gets every row it runs on, ssn included;/,
    );
    // An INSERT trigger sees only the row the caller inserts.
    expect(
      (await inRollback(fx.users.bob, "insert into atk_rowchk.trg_ins values (1, 'verified', 'x')")).code,
    ).toBe('ok');
  });

  test("a row-level security policy's WITH CHECK over the hidden column", async () => {
    expect(await onBoth("update atk_rowchk.rls set status = 'verified' where id = $id")).toEqual([
      '42501',
      '42501',
    ]);
    const r = await fx.users.bob.query("update atk_rowchk.rls set status = 'x' where id = 1").catch((e) => e);
    expect(r.message).toMatch(/the row-level security policy p_write reads ssn of every row/);
  });

  test('a partition key with a hidden column: updating another key column moves the row or fails on it', async () => {
    expect(await onBoth('update atk_rowchk.pt set k = 10 where id = $id')).toEqual(['42501', '42501']);
    const r = await fx.users.bob.query('update atk_rowchk.pt set k = 10 where id = 1').catch((e) => e);
    expect(r.message).toMatch(
      /^column atk_rowchk.pt.k cannot be written: the partition key of pt also reads ssn/,
    );
    // A column outside the key moves nothing.
    expect((await inRollback(fx.users.bob, 'update atk_rowchk.pt set id = id where id = 1')).code).toBe('ok');
  });

  test('a trigger or policy made through pgwarden is seen by the next statement (incremental catalog read)', async () => {
    const dba = await fx.proxy.client('dba');
    try {
      expect((await inRollback(fx.users.bob, "update atk_rowchk.nv2 set name = 'x' where id = 1")).code).toBe(
        'ok',
      );
      await dba.query(
        'create trigger late before delete or update on atk_rowchk.nv2 for each row execute function atk_rowchk.trg_check()',
      );
      expect((await inRollback(fx.users.bob, "update atk_rowchk.nv2 set name = 'x' where id = 1")).code).toBe(
        '42501',
      );
      await dba.query('drop trigger late on atk_rowchk.nv2');
      expect((await inRollback(fx.users.bob, "update atk_rowchk.nv2 set name = 'x' where id = 1")).code).toBe(
        'ok',
      );
      await dba.query('alter table atk_rowchk.nv2 enable row level security');
      await dba.query('create policy late on atk_rowchk.nv2 using (ssn is not null)');
      expect((await inRollback(fx.users.bob, "update atk_rowchk.nv2 set name = 'x' where id = 1")).code).toBe(
        '42501',
      );
    } finally {
      await dba.end();
    }
  });

  test('a stored generated column computed again over the hidden column when another input is updated', async () => {
    // Attack (all walls on): g = length(name) / ssn; updating name recomputes g over the stored
    // ssn: 22012 for row 1 (ssn 0), success for row 2. Refused whichever row.
    expect(await onBoth("update atk_rowchk.gen set name = 'xx' where id = $id")).toEqual(['42501', '42501']);
    const r = await fx.users.bob.query("update atk_rowchk.gen set name = 'xx' where id = 1").catch((e) => e);
    expect(r.message).toBe(
      "column atk_rowchk.gen.name cannot be updated: the generated column g of atk_rowchk.gen is computed again from it and from ssn, which is hidden from you, so the update's success would tell something about its values",
    );
    // Writing the hidden input too gives Postgres only the caller's values; other columns recompute nothing.
    expect(await onBoth("update atk_rowchk.gen set name = 'xx', ssn = 3 where id = $id")).toEqual([
      'ok',
      'ok',
    ]);
    expect(await onBoth('update atk_rowchk.gen set other = 1 where id = $id')).toEqual(['ok', 'ok']);
  });

  test('a rule on the write: its condition over the hidden column made the row count the answer', async () => {
    // Attack: DO INSTEAD NOTHING WHERE old.ssn LIKE '9%' gave UPDATE 0 for row 1, UPDATE 1 for row 2.
    expect(await onBoth("update atk_rowchk.rul set name = 'x' where id = $id")).toEqual(['42501', '42501']);
    const r = await fx.users.bob.query("update atk_rowchk.rul set name = 'x' where id = 1").catch((e) => e);
    expect(r.message).toBe(
      "rows of atk_rowchk.rul cannot be updated: the rule r_upd adds its condition and actions to the update, and they may read ssn; ssn is hidden from you, so the update's success or row count would tell something about its values",
    );
    // An INSERT rule reading another table's hidden column (run with the rule owner's privileges).
    const ins = await fx.users.bob.query("insert into atk_rowchk.rul_ins values (5, '901')").catch((e) => e);
    expect(ins.code).toBe('42501');
    expect(ins.message).toMatch(
      /^rows of atk_rowchk.rul_ins cannot be inserted: the rule r_ins adds its condition and actions to the insert, and they may read atk_rowchk.nv.ssn;/,
    );
  });

  test('a rule made, disabled and dropped through pgwarden is seen by the next statement', async () => {
    const dba = await fx.proxy.client('dba');
    try {
      const upd = "update atk_rowchk.rul2 set name = 'x' where id = 1";
      expect((await inRollback(fx.users.bob, upd)).code).toBe('ok');
      await dba.query(
        "create rule late as on update to atk_rowchk.rul2 where old.ssn like '9%' do instead nothing",
      );
      expect((await inRollback(fx.users.bob, upd)).code).toBe('42501');
      await dba.query('alter table atk_rowchk.rul2 disable rule late');
      expect((await inRollback(fx.users.bob, upd)).code).toBe('ok');
      await dba.query('alter table atk_rowchk.rul2 enable rule late');
      expect((await inRollback(fx.users.bob, upd)).code).toBe('42501');
      await dba.query('drop rule late on atk_rowchk.rul2');
      expect((await inRollback(fx.users.bob, upd)).code).toBe('ok');
    } finally {
      await dba.end();
    }
  });
});
