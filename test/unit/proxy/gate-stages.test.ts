// Where a multi-statement string is cut into stages (issue 15), and when one that controls its transaction may run in stages.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Catalog } from '../../../src/catalog/types.js';
import { blockAfterHead, stageable } from '../../../src/proxy/gate-stages.js';
import { analyze, loadParser } from '../../../src/sql/analyze.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

let catalog: Catalog;
beforeAll(async () => {
  await loadParser(15);
  catalog = loadDemoCatalog();
});

const stages = (sql: string) => stageable(analyze(sql, { catalog, searchPath: ['public'] }));
const head = (sql: string, inBlock: boolean) =>
  blockAfterHead(analyze(sql, { catalog, searchPath: ['public'] }).statements, inBlock);

describe('stageable', () => {
  it('cuts before a statement naming a relation after DDL, though the relation is known (its columns may have changed)', () => {
    expect(stages('alter table orders add column extra int; select * from orders')).toEqual({
      at: 1,
      controls: false,
    });
    expect(stages('alter table orders drop column note; insert into orders values (1, 1, 1)')).toEqual({
      at: 1,
      controls: false,
    });
  });
  it('cuts at an unknown name after the first statement, DDL before it or not (its error comes after their replies)', () => {
    expect(stages('create temp table t(id int); insert into t values (1)')).toEqual({
      at: 1,
      controls: false,
    });
    expect(stages('select 1; select nope from users')).toEqual({ at: 1, controls: false });
  });
  it('says when the string controls its own transaction (a migration file)', () => {
    expect(stages('begin; create table m(id int); insert into m values (1); commit')).toEqual({
      at: 2,
      controls: true,
    });
  });
  it('does not cut a string decided whole: DDL after DDL, the catalog read after DDL, a refusal that is no unknown name, an unknown name first', () => {
    expect(stages('create table a(id int); create index on a(id)')).toBeNull();
    expect(
      stages("alter table orders add column x int; select count(*) from pg_class where relname = 'orders'"),
    ).toBeNull();
    expect(stages('select 1; select ssn from users where 1 = (select 1, 2)')).toBeNull();
    expect(stages('select nope from users; select 1')).toBeNull();
  });
});

describe('blockAfterHead', () => {
  it('open when the head begins a block or runs inside the client’s', () => {
    expect(head('begin; create table m(id int)', false)).toBe('open');
    expect(head('create table m(id int)', true)).toBe('open');
    expect(head('create table m(id int); begin', false)).toBe('open');
  });
  it('ended when its last statement ends the transaction', () => {
    expect(head('begin; create table m(id int); commit', false)).toBe('ended');
    expect(head('create table m(id int); commit', false)).toBe('ended');
  });
  it('null when statements after a COMMIT would commit on their own, outside any block, or with two-phase commit', () => {
    expect(head('begin; commit; create table m(id int)', false)).toBeNull();
    expect(head('create table m(id int)', false)).toBeNull();
    expect(head("begin; create table m(id int); prepare transaction 'x'", false)).toBeNull();
  });
});
