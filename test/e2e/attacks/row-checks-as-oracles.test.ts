// Writes whose success or row count the server decides over a hidden column of every row they change: user triggers, RLS policies, NOT VALID CHECKs, partition keys.
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
  `,
  hidden: [
    { schema: 'atk_rowchk', table: 'nv', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'nv2', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'trg', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'trg_ins', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'rls', column: 'ssn' },
    { schema: 'atk_rowchk', table: 'pt', column: 'ssn' },
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
});
