// A prepared statement whose text pgwarden rewrote, bound again after a view it reads was redefined: PostgreSQL analyzes it again with the new definition, so pgwarden decides it again too.
import { describe, expect, test } from 'vitest';
import { bind, execute, parse, query, sync } from '../../../src/wire/frontend-encode.js';
import { cells, errorCodes, SSNS } from '../../helpers/outcomes.js';
import { demoConfigSingle } from '../../helpers/proxy.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

describe('roles: single (the analysis and mask at read)', () => {
  const fx = useProxyFixture({
    setup: 'drop view if exists atk_prep_v; create view atk_prep_v as select id, name from users',
    teardown: 'drop view if exists atk_prep_v',
    users: ['dba'],
    config: demoConfigSingle,
  });
  test('Bind of a rewritten prepared statement after CREATE OR REPLACE VIEW never returns the new column unmasked', async () => {
    const alice = await fx.raw('alice');
    try {
      // users has a hidden column (ssn): the text is rewritten (users masked), the view is not.
      const text = 'select v.name from users u join atk_prep_v v on v.id = u.id order by u.id limit 3';
      alice.write(Buffer.concat([parse('s', text), bind({ statement: 's' }), execute(), sync()]));
      expect(cells(await alice.untilReady())).toEqual(['Ada Tervo', 'Bram Wendt', 'Cleo Zeller']);
      await fx.users.dba.query(
        'create or replace view atk_prep_v as select id, ssn as name from public.users',
      );
      alice.write(Buffer.concat([bind({ statement: 's' }), execute(), sync()]));
      const after = await alice.untilReady();
      for (const s of SSNS) expect(cells(after)).not.toContain(s);
      expect(cells(after).length > 0 ? cells(after) : errorCodes(after)).toEqual(
        cells(after).length > 0 ? ['*****', '*****', '*****'] : ['0A000'],
      );
    } finally {
      alice.end();
      await fx.users.dba.query('create or replace view atk_prep_v as select id, name from public.users');
    }
  });
  test('EXECUTE of a rewritten SQL-level prepared statement after CREATE OR REPLACE VIEW never returns it either', async () => {
    const alice = await fx.raw('alice');
    const run = async (sql: string) => {
      alice.write(query(sql));
      const got = await alice.untilReady();
      return cells(got).length > 0 ? cells(got) : errorCodes(got);
    };
    try {
      const text = 'select v.name from users u join atk_prep_v v on v.id = u.id order by u.id limit 3';
      expect(await run(`prepare q as ${text}`)).toEqual([]);
      expect(await run('execute q')).toEqual(['Ada Tervo', 'Bram Wendt', 'Cleo Zeller']);
      await fx.users.dba.query(
        'create or replace view atk_prep_v as select id, ssn as name from public.users',
      );
      const after = await run('execute q');
      for (const s of SSNS) expect(after).not.toContain(s);
    } finally {
      alice.end();
      await fx.users.dba.query('create or replace view atk_prep_v as select id, name from public.users');
    }
  });
});
