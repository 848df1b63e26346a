-- Transparency cases: each runs directly upstream (as pgwarden_app) and through pgwarden as dba, and must answer the same bytes.
--
-- Format (read by wire-session.ts parseCases):
--   -- @setup                   the schema, loaded once into a template database both sides are copied from
--   -- @case [modes=…] [differs=SQLSTATE | reason]
--                               one case: the SQL up to the next directive, sent as one Query (simple) and as
--                               Parse/Bind/Describe/Execute/Sync with text and with binary results (text, binary);
--                               modes= narrows that (DDL and non-repeatable statements run once, in simple mode);
--                               isolate runs it directly inside BEGIN … ROLLBACK (a setting pgwarden refuses)
--   -- @copy                    the case's COPY FROM STDIN data
--   -- @params                  the case's Bind parameters, one a line in text format, \N for NULL (extended modes only)
-- Both sides run the same cases in the same order, so writes leave both databases equal.
-- differs= marks a statement pgwarden refuses for a reason DESIGN.md gives; the reason is shown in the test name.

-- @setup
create type mood as enum ('sad', 'ok', 'happy');
create domain posint as int check (value > 0);
create domain email_text as text check (value like '%@%');
create type address as (street text, city text, zip varchar(10));

create table t_types (
  id int primary key,
  i2 int2, i4 int4, i8 int8, num numeric(14,4), f4 float4, f8 float8,
  txt text, vc varchar(20), ch char(5), b bool,
  d date, ts timestamp, tstz timestamptz, iv interval, tm time,
  u uuid, j json, jb jsonb, by bytea,
  ia int[], ta text[], m mood, p posint, e email_text, addr address
);
insert into t_types values
  (1, 1, 10, 100, 1.5, 1.25, 2.5, 'one', 'uno', 'a', true,
   '2024-01-01', '2024-01-01 10:00:00', '2024-01-01 10:00:00+02', '1 day 2 hours', '10:30:00',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": 1, "b": [1, 2]}', '{"a": 1, "b": [1, 2]}', '\x00010203ff',
   '{1,2,3}', '{a,"b c",NULL}', 'happy', 5, 'one@example.com', row('1 Main St', 'Springfield', '12345')),
  (2, -32768, -2147483648, -9223372036854775808, -99999.9999, 'NaN', '-Infinity', '', '', '', false,
   '-infinity', '1999-12-31 23:59:59.999999', 'infinity', '-1 year -2 mons +3 days 04:05:06.789', '00:00:00',
   '00000000-0000-0000-0000-000000000000', '[]', '{}', '\x', '{}', '{}', 'sad', 1, 'x@y', row(null, '', null)),
  (3, 32767, 2147483647, 9223372036854775807, 0.0001, 3.4e38, 1.7976931348623157e308, 'ünïcödé ✓ 日本語', 'ok', 'abcde', null,
   '2000-02-29', '2038-01-19 03:14:07', '1970-01-01 00:00:00+00', '0', '23:59:59.999999',
   'ffffffff-ffff-ffff-ffff-ffffffffffff', '"str"', '"str"', '\xdeadbeef', '{{1,2},{3,4}}', '{"x,y","{z}"}', 'ok', 2147483647, 'a@b.c', row('x', 'y', 'z')),
  (4, 0, 0, 0, 0, -0, -0, 'tab	and
newline', 'quote''s', ' ', true,
   '1900-01-01', '1900-01-01 00:00:00', '2024-06-30 12:00:00-07', '-00:00:01', '12:00:00',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', 'null', 'null', '\x5c', '{NULL,NULL}', '{"",NULL}', 'ok', 42, 'q@q', null),
  (5, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
   null, null, null, null, null, null, null, null, null, null);

create table accounts (
  id serial primary key,
  owner text not null,
  balance numeric(12,2) not null default 0 check (balance >= 0),
  email email_text unique,
  opened date not null default date '2024-01-01'
);
insert into accounts (owner, balance, email) values
  ('ann', 100, 'ann@example.com'), ('ben', 250.50, 'ben@example.com'), ('cy', 0, null), ('dee', 999.99, 'dee@example.com');

create table ledger (
  id bigserial primary key,
  account_id int not null references accounts(id) on delete cascade,
  amount numeric(12,2) not null,
  note text,
  at timestamptz not null default '2024-01-01 00:00:00+00'
);
insert into ledger (account_id, amount, note, at)
  select 1 + (g % 4), (g * 7 % 100) - 40, 'n' || g, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 hour'
  from generate_series(1, 200) g;

create table kv (k text primary key, v jsonb, version int not null default 1);
insert into kv values ('a', '{"n": 1}', 1), ('b', '{"n": 2}', 1);

create table big as select g as id, md5(g::text) as h, g % 7 as bucket from generate_series(1, 5000) g;
alter table big add primary key (id);

create table staging (id int, name text, amount numeric, tags text[]);

create table events (
  id int generated always as identity primary key,
  kind text not null,
  payload jsonb,
  seen bool not null default false
);

create table parted (id int not null, region text not null, v text) partition by list (region);
create table parted_eu partition of parted for values in ('eu');
create table parted_us partition of parted for values in ('us');
insert into parted values (1, 'eu', 'a'), (2, 'us', 'b'), (3, 'eu', 'c');

create view account_totals as
  select a.id, a.owner, coalesce(sum(l.amount), 0) as total, count(l.id) as entries
  from accounts a left join ledger l on l.account_id = a.id group by a.id, a.owner;

create function add_entry(acc int, amt numeric) returns bigint language sql
  as 'insert into ledger (account_id, amount, note) values (acc, amt, ''fn'') returning id';

create function boom(n int) returns int language plpgsql as $$
begin
  if n < 0 then raise exception 'negative: %', n using errcode = 'P0042', hint = 'pass a positive number'; end if;
  raise notice 'boom(%)', n;
  return n * 2;
end $$;

-- ───────────────────────────── reads: the types, text and binary ─────────────────────────────
-- @case
select * from t_types order by id
-- @case
select id, i2, i4, i8 from t_types order by id
-- @case
select id, num, f4, f8 from t_types order by id
-- @case
select id, txt, vc, ch, b from t_types order by id
-- @case
select id, d, ts, tstz, iv, tm from t_types order by id
-- @case
select id, u, j, jb, by from t_types order by id
-- @case
select id, ia, ta, m, p, e, addr from t_types order by id
-- @case
select (addr).city, (addr).zip, addr is null as no_addr from t_types order by id
-- @case
select jb -> 'b' as b, jb ->> 'a' as a, jb #> '{b,1}' as b1, j -> 'a' as ja from t_types where id = 1
-- @case
select jsonb_build_object('id', id, 'm', m, 'ia', ia) as doc from t_types order by id
-- @case
select array_agg(i4 order by id) as a, string_agg(txt, '|' order by id) as s from t_types
-- @case
select ia[1] as first, array_length(ia, 1) as len, cardinality(ia) as card, ta[2] as second from t_types order by id
-- @case
select m, m::text, m < 'happy'::mood as lt, enum_range(null::mood) as all_moods from t_types where m is not null order by id
-- @case
select p + 1 as next, p::int8 * 2 as dbl, e::text from t_types where p is not null order by p
-- @case
select 1::int2 as a, 2::int4 as b, 3::int8 as c, 4.5::numeric as d, 5.5::float4 as e, 6.5::float8 as f
-- @case
select 'NaN'::numeric as n, 'Infinity'::float8 as i, '-0'::float8 as z, 1e-300::float8 as tiny, 123456789012345678901234567890.123456789::numeric as big
-- @case
select true as t, false as f, null::bool as n, 'yes'::bool as y
-- @case
select date '2024-02-29' as d, timestamp '2024-02-29 12:34:56.789' as ts, timestamptz '2024-02-29 12:34:56.789+05:30' as tz, interval '1 year 2 months 3 days 04:05:06' as iv
-- @case
select time '13:14:15.161718' as t, timetz '13:14:15+03' as ttz, date 'infinity' as inf
-- @case
select '\x000102'::bytea as b, decode('68656c6c6f', 'hex') as h, convert_to('ünï', 'UTF8') as u
-- @case
select '{"a":[1,2,{"b":null}]}'::json as j, '{"b":2,"a":1}'::jsonb as jb, '[1, "two", 3.0]'::jsonb as arr
-- @case
select gen_random_uuid() is not null as ok, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid as u
-- @case
select '{{1,2},{3,4}}'::int[] as m, '{}'::text[] as e, array[null, 1]::int8[] as n, array['a', 'b']::varchar(3)[] as v
-- @case
select row(1, 'a', null) as r, row(1, row(2, 3)) as nested
-- @case
select row('s', 'c', 'z')::address as a, (row('s', 'c', 'z')::address).city as city
-- @case
select '192.168.0.1/24'::inet as i, '08:00:2b:01:02:03'::macaddr as mac, '(1,2)'::point as pt, '[1,5)'::int4range as r
-- @case
select 12.345::numeric(5,2) as n, 'abc'::char(6) as c, 'abcdef'::varchar(3) as v, 'x'::"char" as ch
-- @case
select 'a'::name as n, 'pg_class'::regclass::text as rc, 'int4'::regtype::text as rt, 1::oid as o
-- @case
select id, txt from t_types where txt is distinct from '' order by id nulls first
-- @case
select count(*), count(i4), sum(i8::numeric), avg(num), min(d), max(tstz), bool_and(b), bool_or(b) from t_types

-- ───────────────────────────── reads: joins, subqueries, CTEs, windows, set operators ─────────────────────────────
-- @case
select a.owner, l.amount, l.note from accounts a join ledger l on l.account_id = a.id where l.id <= 8 order by l.id
-- @case
select a.owner, count(l.id) as n, sum(l.amount) as total from accounts a left join ledger l on l.account_id = a.id group by a.owner order by a.owner
-- @case
select * from account_totals order by id
-- @case
select owner from accounts a where exists (select 1 from ledger l where l.account_id = a.id and l.amount > 55) order by 1
-- @case
select owner, (select max(amount) from ledger l where l.account_id = a.id) as top from accounts a order by id
-- @case
select owner from accounts where id in (select account_id from ledger group by account_id having sum(amount) > 0) order by owner
-- @case
select * from accounts a cross join lateral (select amount, note from ledger l where l.account_id = a.id order by amount desc, id limit 2) t order by a.id, t.amount desc
-- @case
select * from accounts natural join (select 1 as id, 'extra' as x) s
-- @case
select a.id, b.id from accounts a full join (values (1), (9)) b(id) using (id) order by 1 nulls last, 2
-- @case
with recent as (select * from ledger where id > 190) select account_id, count(*) from recent group by 1 order by 1
-- @case
with recursive n(i) as (select 1 union all select i + 1 from n where i < 50) select sum(i), count(*) from n
-- @case
with recursive tree(id, depth, path) as (
  select 1, 0, array[1]
  union all
  select t.id * 2 + k, depth + 1, path || (t.id * 2 + k) from tree t, (values (0), (1)) v(k) where depth < 4
) select depth, count(*), max(path::text) from tree group by depth order by depth
-- @case
with w as materialized (select id, amount from ledger) select count(*) from w where amount < 0
-- @case
select id, amount, sum(amount) over (partition by account_id order by id) as running, row_number() over w as rn, rank() over (order by amount) as rk
from ledger where id <= 20 window w as (partition by account_id order by id) order by id
-- @case
select account_id, amount, lag(amount) over (partition by account_id order by id), lead(amount, 2, 0) over (partition by account_id order by id), first_value(note) over (partition by account_id order by id rows between unbounded preceding and unbounded following)
from ledger where id <= 16 order by id
-- @case
select bucket, percentile_cont(0.5) within group (order by id) as med, mode() within group (order by bucket) as md, count(*) filter (where id % 2 = 0) as evens
from big group by bucket order by bucket
-- @case
select ntile(4) over (order by id) as q, id from big where id <= 12 order by id
-- @case
select owner from accounts union select 'zed' order by 1
-- @case
select owner from accounts union all select owner from accounts order by 1
-- @case
select account_id from ledger intersect select id from accounts order by 1
-- @case
select id from accounts except select account_id from ledger where amount > 1000 order by 1
-- @case
select account_id from ledger intersect all select account_id from ledger where id < 10 order by 1
-- @case
(select id from accounts order by id desc limit 2) union all (select id from accounts order by id limit 1)
-- @case
select distinct on (account_id) account_id, id, amount from ledger order by account_id, amount desc, id
-- @case
select account_id, grouping(account_id), sum(amount) from ledger group by rollup (account_id) order by 1 nulls last
-- @case
select account_id, note is null, count(*) from ledger group by cube (account_id, note is null) order by 1 nulls last, 2 nulls last
-- @case
select id, case when amount > 0 then 'credit' when amount < 0 then 'debit' else 'zero' end as kind, coalesce(note, '-'), nullif(amount, 0), greatest(amount, 0) from ledger where id <= 6 order by id
-- @case
select * from (values (1, 'a'), (2, null), (3, 'c')) v(n, s) order by n desc
-- @case
select g, g * g as sq from generate_series(1, 10) g
-- @case
select * from unnest(array[1, 2, 3], array['a', 'b']) with ordinality as u(n, s, ord)
-- @case
select * from jsonb_to_recordset('[{"a":1,"b":"x"},{"a":2,"b":"y"}]') as r(a int, b text)
-- @case
select key, value from jsonb_each('{"x": 1, "y": [true]}'::jsonb) order by key
-- @case
select (jsonb_each('{"x": 1, "y": [true]}'::jsonb)).*, 1 as one
-- @case modes=simple
select nosuchfn(1, 'a', null, 2.5, id::text) from accounts
-- @case
select x.key, x.value, t.* from jsonb_each('{"a": 2}') x, json_each_text('{"b": 3}') t
-- @case
select regexp_replace('Hello World', 'o', '0', 'g') as r, split_part('a,b,c', ',', 2) as p, format('%s=%L', 'k', 'v''s') as f, upper('straße') as up
-- @case
select length('日本語') as chars, octet_length('日本語') as bytes, md5('x') as m, left('abcdef', 3) as l, lpad('7', 3, '0') as z
-- @case
select to_char(date '2024-03-05', 'YYYY-MM-DD Dy') as d, to_char(1234567.891, 'FM9G999G999D00') as n, extract(epoch from interval '1 day') as e, date_trunc('month', timestamp '2024-03-05 12:00') as t
-- @case
select 7 / 2 as i, 7 / 2.0 as n, 7 % 3 as m, 2 ^ 10 as p, |/ 16 as sq, round(2.5) as r, trunc(-2.5) as t, 1::numeric / 3 as third
-- @case
select id from big where id between 100 and 105 order by id desc
-- @case
select count(*) from big where h like 'a%'
-- @case
select id, h from big where id = 4321
-- @case
select * from parted order by id
-- @case
select tableoid::regclass::text as part, id from parted order by id
-- @case
select account_id, amount from ledger order by amount desc, id limit 5 offset 3
-- @case
select account_id, amount from ledger order by id fetch first 3 rows only
-- @case
table kv
-- @case
values (1, 'a'), (2, 'b')
-- @case
select id, owner from accounts where id = 1 for update
-- @case
select ctid, id from accounts order by id
-- @case
select 1 as a, 2 as a, 3 as "A", 4 as "select", 5 as "with space"
-- @case
select
-- @case
select 1 where false
-- @case
select null
-- @case
select $$dollar 'quoted' text$$ as d, E'esc\tape\\' as e, U&'\0041\00e9' as u, 'it''s' as q
-- @case
SELECT "id", "owner" FROM "accounts" WHERE "id" = 1
-- @case
select pg_typeof(1.0) as a, pg_typeof('x'::text) as b, pg_typeof(now()) as c
-- @case
select count(*) from information_schema.columns where table_schema = 'public' and table_name = 't_types'
-- @case
select c.relname, c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' order by 1
-- @case
select attname, format_type(atttypid, atttypmod) from pg_attribute where attrelid = 'public.t_types'::regclass and attnum > 0 order by attnum
-- @case
select typname, typtype from pg_type where typname in ('mood', 'posint', 'address', 'email_text') order by 1
-- @case
select proname, pg_get_function_arguments(oid) from pg_proc where proname in ('add_entry', 'boom') order by 1
-- @case
select conname, contype, pg_get_constraintdef(oid) from pg_constraint where conrelid = 'public.accounts'::regclass order by conname
-- @case
select indexname, indexdef from pg_indexes where schemaname = 'public' order by 1
-- @case
select pg_get_viewdef('account_totals'::regclass, true)
-- @case
show DateStyle
-- @case
show search_path
-- @case
select current_setting('TimeZone') as tz, current_setting('server_version_num') as v, current_setting('integer_datetimes') as idt
-- @case
explain (costs off) select * from accounts where id = 1
-- @case
explain (costs off, verbose) select owner, sum(amount) from accounts a join ledger l on l.account_id = a.id group by owner

-- ───────────────────────────── parameters (extended protocol only) ─────────────────────────────
-- @case
select id, owner, balance from accounts where id = $1
-- @params
2
-- @case
select $1::int + $2::int as sum, $3::text as t, $4::date as d, $5::int is null as n
-- @params
40
2
ünï
2024-02-29
\N
-- @case
select id, h from big where id = any($1::int[]) order by id
-- @params
{5,10,15}
-- @case
select $1::jsonb -> 'a' as a, $2::numeric * 2 as n, $3::mood as m, $4::address as addr
-- @params
{"a": [1, "x"]}
12.345
ok
(s,c,z)
-- @case
select $1::int
-- @params
not-a-number
-- @case
select id from accounts where owner = $1
-- @params
\N

-- ───────────────────────────── large results ─────────────────────────────
-- @case
select * from big order by id
-- @case
select id, h, bucket, repeat(h, 10) as wide from big where id <= 2000 order by id
-- @case
select string_agg(h, '' order by id) as one_big_value from big
-- @case
select repeat('x', 3000000) as three_mb
-- @case
select g, g::text, g::numeric / 7, array[g, g + 1], row(g, 'r') from generate_series(1, 10000) g

-- ───────────────────────────── writes with RETURNING, upserts, MERGE ─────────────────────────────
-- @case
insert into staging values (1, 'one', 1.5, '{a}') returning *
-- @case
insert into staging (id, name) values (2, 'two'), (3, 'three') returning id, name, amount
-- @case
insert into staging select id, h, bucket, array[h] from big where id <= 10 returning id
-- @case
update staging set amount = coalesce(amount, 0) + 1 where id <= 3 returning id, amount
-- @case
update staging s set name = b.h from big b where b.id = s.id and s.id between 4 and 6 returning s.id, s.name
-- @case
delete from staging where id = 10 returning *
-- @case
delete from staging where id > 1000000
-- @case
select id, name, amount, tags from staging order by id, name
-- @case
insert into kv values ('c', '{"n": 3}') on conflict (k) do update set v = excluded.v, version = kv.version + 1 returning k, v, version
-- @case
insert into kv values ('a', '{"n": 10}') on conflict (k) do update set v = kv.v || excluded.v, version = kv.version + 1 returning *
-- @case
insert into kv values ('a', '{"n": 11}') on conflict do nothing returning *
-- @case
insert into kv values ('b', '{"n": 20}') on conflict on constraint kv_pkey do update set version = kv.version + 1 where kv.version < 3 returning k, version
-- @case
select * from kv order by k
-- @case modes=simple
merge into kv t using (values ('a', '{"m": 1}'::jsonb), ('z', '{"m": 2}'::jsonb)) s(k, v) on t.k = s.k
when matched then update set v = t.v || s.v, version = t.version + 1
when not matched then insert (k, v) values (s.k, s.v)
-- @case modes=simple
merge into kv t using (select 'b' as k) s on t.k = s.k when matched and t.version > 100 then delete when matched then do nothing
-- @case modes=simple
merge into staging t using (select id from big where id <= 12) s on t.id = s.id
when matched and t.id % 2 = 0 then delete
when matched then update set name = 'merged'
when not matched then insert (id, name) values (s.id, 'new')
-- @case
select * from kv order by k
-- @case
select id, name from staging order by id, name
-- @case
insert into events (kind, payload) values ('signup', '{"user": "ann"}'), ('login', null) returning id, kind, seen
-- @case
insert into events (id, kind) values (100, 'forced') returning id
-- @case
insert into events (id, kind) overriding system value values (1000, 'forced') returning id
-- @case
with moved as (delete from events where kind = 'login' returning *) insert into events (kind, payload) select 'relogin', to_jsonb(moved.kind) from moved returning kind, payload
-- @case
update events set seen = true where id in (select id from events where not seen order by id limit 2) returning id, seen
-- @case
select add_entry(2, 12.5) > 0 as added
-- @case
select account_id, amount, note from ledger where note = 'fn' order by id
-- @case
update accounts set balance = balance - 10 where owner = 'ann' returning owner, balance
-- @case
insert into parted values (4, 'us', 'd'), (5, 'eu', 'e') returning *
-- @case
update parted set region = 'us' where id = 1 returning tableoid::regclass::text, *

-- ───────────────────────────── transactions ─────────────────────────────
-- @case
begin
-- @case
insert into staging (id, name) values (500, 'in tx') returning id
-- @case
savepoint s1
-- @case
insert into staging (id, name) values (501, 'to undo')
-- @case
rollback to savepoint s1
-- @case
release savepoint s1
-- @case
select count(*) from staging where id >= 500
-- @case
commit
-- @case modes=simple
begin; insert into staging (id, name) values (502, 'x'); select 1/0; commit
-- @case
select count(*) from staging where id = 502
-- @case modes=simple
begin isolation level repeatable read read only
-- @case
select count(*) from accounts
-- @case
insert into staging (id) values (503)
-- @case
select 1
-- @case
rollback
-- @case
commit
-- @case modes=simple
start transaction; set local statement_timeout = '5s'; show statement_timeout; commit; show statement_timeout
-- @case modes=simple
begin; declare c1 cursor for select id, h from big order by id; fetch 3 from c1; fetch forward 2 from c1; move 100 in c1; fetch 1 from c1; close c1; commit
-- @case modes=simple
begin; declare c2 scroll cursor for select id from accounts order by id; fetch last from c2; fetch prior from c2; fetch absolute 1 from c2; commit
-- @case modes=simple
prepare q1(int) as select id, owner, balance from accounts where id = $1
-- @case
execute q1(2)
-- @case
execute q1(99)
-- @case modes=simple
deallocate q1
-- @case modes=simple
execute q1(1)
-- @case modes=text,binary differs=26000 | DESIGN.md (extended protocol): pgwarden analyzes at Parse, so EXECUTE of an unknown prepared statement fails at Parse, not at Execute after ParseComplete/BindComplete/NoData
execute q1(1)
-- @case modes=simple
begin; lock table accounts in share mode; select count(*) from accounts; commit

-- ───────────────────────────── COPY in and out ─────────────────────────────
-- @case modes=simple,text
copy (select id, i2, num, txt, d, tstz, ia, m, addr from t_types order by id) to stdout
-- @case modes=simple,text
copy (select * from t_types order by id) to stdout with (format csv, header)
-- @case modes=simple,text
copy (select * from t_types order by id) to stdout with (format binary)
-- @case modes=simple,text
copy accounts (id, owner, balance) to stdout
-- @case modes=simple,text
copy (select * from big order by id) to stdout
-- @case modes=simple,text
copy staging (id, name, amount, tags) from stdin
-- @copy
700	copied	1.25	{x,y}
701	\N	\N	\N
702	tab\there	-0	{}
-- @case modes=simple,text
copy staging from stdin with (format csv, header)
-- @copy
id,name,amount,tags
710,"quoted, comma",2,"{""a b""}"
711,,3,
-- @case
select * from staging where id >= 700 order by id, name
-- @case modes=simple,text
copy staging (id, name) from stdin
-- @copy
720	fine
not-a-number	broken
-- @case modes=simple,text
copy staging (id) from stdin
-- @copy
-- @case modes=simple,text
copy accounts (owner, balance) from stdin
-- @copy
eve	-5
-- @case modes=simple,text
copy (select 1/0) to stdout
-- @case modes=simple,text differs=42P01 | DESIGN.md: names that do not resolve are refused before sending; pgwarden's own error has Postgres's SQLSTATE and message but adds a POSITION Postgres does not give for COPY
copy nosuchtable to stdout

-- ───────────────────────────── errors ─────────────────────────────
-- @case
insert into accounts (owner, email) values ('dup', 'ann@example.com')
-- @case
insert into accounts (owner, balance) values ('neg', -1)
-- @case
insert into accounts (owner) values (null)
-- @case
insert into ledger (account_id, amount) values (9999, 1)
-- @case
delete from accounts where id = 1 and false
-- @case
insert into t_types (id, p) values (100, 0)
-- @case
insert into t_types (id, e) values (101, 'not-an-email')
-- @case
insert into kv values ('a', '{}')
-- @case
select 1/0
-- @case
select 1 / (select count(*) - count(*) from accounts)
-- @case
select 'abc'::int
-- @case
select 2147483647::int4 + 1
-- @case
select '2024-02-30'::date
-- @case
select '{"a": '::jsonb
-- @case
select 'not-a-uuid'::uuid
-- @case
select 'nope'::mood
-- @case
select array[1, 2][3] as out_of_range, (array[1, 2])[0] as zero
-- @case
select 'x'::varchar(2)::char(1), 'abc'::varchar(2)
-- @case modes=simple,text
select * from nosuchtable
-- @case modes=simple,text
select nosuchcolumn from accounts
-- @case modes=simple,text differs=42703 | DESIGN.md: a.nosuch does not resolve (Postgres reads it as nosuch(a)) and is refused before sending; pgwarden adds a HINT
select a.nosuch from accounts a
-- @case
select id from accounts, ledger
-- @case modes=simple,text
select nosuchfunction(1)
-- @case
select boom(-1)
-- @case
selec 1
-- @case
select (1
-- @case
select 'unterminated
-- @case
select 1; select 2
-- @case modes=simple
select 1 as ok; select 1/0; select 3 as never
-- @case
insert into accounts values ('x')
-- @case modes=simple,text
update accounts set nosuch = 1
-- @case
create table accounts (id int)
-- @case modes=simple,text
drop table nosuchtable
-- @case
select * from generate_series(1, 3) g where g = 'x'
-- @case
select sum(owner) from accounts
-- @case
select owner from accounts group by id having owner = 'ann' order by 1
-- @case modes=simple,text
select raise_me from (select 1) s(a)
-- @case modes=simple
fetch 1 from nosuchcursor
-- @case modes=text,binary differs=34000 | DESIGN.md (extended protocol): pgwarden analyzes at Parse, so FETCH from an unknown cursor fails at Parse, not at Execute after ParseComplete/BindComplete/NoData
fetch 1 from nosuchcursor
-- @case
rollback to savepoint nosuch
-- @case
commit
-- @case
select pg_sleep(0)

-- ───────────────────────────── NOTICEs, DO, LISTEN/NOTIFY, DDL, session ─────────────────────────────
-- @case modes=simple
do $$ begin raise notice 'hello from DO'; raise warning 'careful: %', 42; raise info 'info %', 'x'; end $$
-- @case modes=simple
do $$ begin raise notice using message = 'with detail', detail = 'the detail', hint = 'the hint', errcode = '01ABC'; end $$
-- @case modes=simple
do $$ begin raise exception 'DO failed' using errcode = 'P0001', detail = 'why'; end $$
-- @case
select boom(21)
-- @case
drop table if exists no_such_table_here
-- @case modes=simple
create table if not exists staging (id int)
-- @case
listen transparency_chan
-- @case
notify transparency_chan, 'payload one'
-- @case
select pg_notify('transparency_chan', 'payload two')
-- @case modes=simple
begin; notify transparency_chan, 'in tx a'; notify transparency_chan, 'in tx b'; commit
-- @case modes=simple
begin; notify transparency_chan, 'rolled back'; rollback
-- @case
unlisten transparency_chan
-- @case
notify transparency_chan, 'nobody listens'
-- @case modes=simple
create table scratch (id int primary key, v text default 'd', created date default '2024-01-01')
-- @case
insert into scratch (id) values (1), (2) returning *
-- @case
select * from scratch order by id
-- @case modes=simple
alter table scratch add column extra int default 7
-- @case
select * from scratch order by id
-- @case modes=simple
create index scratch_v on scratch (v)
-- @case modes=simple
create view scratch_view as select id, v from scratch where id > 1
-- @case
select * from scratch_view
-- @case modes=simple
create table scratch2 as select id, h from big where id <= 100
-- @case
select count(*), min(h) from scratch2
-- @case modes=simple
select id, h into scratch3 from big where id <= 10
-- @case modes=simple
truncate scratch2
-- @case modes=simple
drop view scratch_view; drop table scratch, scratch2, scratch3
-- @case modes=simple
create temp table tmp_t (id int, v text)
-- @case
insert into tmp_t values (1, 'temp') returning *
-- @case
select * from tmp_t
-- @case modes=simple
drop table tmp_t
-- @case modes=simple
vacuum analyze staging
-- @case modes=simple
comment on table staging is 'rows for tests'
-- @case
select obj_description('staging'::regclass, 'pg_class')
-- @case
set DateStyle = 'SQL, DMY'
-- @case
select date '2024-03-05' as d, timestamp '2024-03-05 01:02:03' as ts
-- @case
reset DateStyle
-- @case
set TimeZone = 'Asia/Kathmandu'
-- @case
select timestamptz '2024-01-01 00:00:00+00' as t, tstz from t_types order by id
-- @case
reset TimeZone
-- @case
set IntervalStyle = 'iso_8601'
-- @case
select iv from t_types order by id
-- @case
reset IntervalStyle
-- @case
set extra_float_digits = 0
-- @case
select f4, f8, 0.1::float8 + 0.2::float8 as sum from t_types order by id
-- @case
reset extra_float_digits
-- @case
set bytea_output = 'escape'
-- @case
select by from t_types order by id
-- @case
reset bytea_output
-- @case modes=simple
set search_path = pg_catalog, public
-- @case
select count(*) from accounts
-- @case modes=simple
set search_path to default
-- @case
select set_config('application_name', 'transparency', false) as v
-- @case
show application_name
-- @case
select set_config(name, 'view, foreign-table', false) from pg_settings where name = 'restrict_nonsystem_relation_kind'
-- @case modes=simple isolate differs=0A000 | DESIGN.md: standard_conforming_strings stays on; a change is refused, or the parser would read string literals differently from the server
set standard_conforming_strings = off
-- @case modes=simple isolate differs=0A000 | DESIGN.md: client_encoding stays UTF8; a change is refused, or the parser would read the text differently from the server
set client_encoding = 'LATIN1'
-- @case modes=simple isolate differs=0A000 | DESIGN.md: set_config of client_encoding is a change of how text is read, refused
select set_config('client_encoding', 'SQL_ASCII', false)
-- ─────────────── a string that uses what it creates (one implicit transaction) ───────────────
-- @case modes=simple
create temp table tmp_made(id int primary key, note text); insert into tmp_made values (1, 'a'), (2, 'b'); select * from tmp_made order by id
-- @case
select count(*) from tmp_made
-- @case modes=simple
create table staged_gone(id int primary key); insert into staged_gone values (1); insert into staged_gone values (1); select 'never'
-- @case
select count(*) from pg_class where relname = 'staged_gone'
-- @case modes=simple
create temp table tmp_bad(id int); select nope from tmp_bad
-- @case modes=simple
create table staged_t(id int); alter table staged_t add column v text; insert into staged_t values (1, 'x') returning *; create view staged_v as select v from staged_t; select * from staged_v
-- @case modes=simple
drop view staged_v; drop table staged_t; select count(*) from pg_class where relname in ('staged_t', 'staged_v')
-- @case modes=simple
create function pg_temp.staged_f(out response text, out caught text) returns record language plpgsql as $$ begin response := 'ok'; end $$; select (staged_f.response), staged_f.caught from pg_temp.staged_f(); drop function if exists pg_temp.staged_f()
-- @case modes=simple
begin
-- @case modes=simple
create temp table tmp_in_tx(id int); insert into tmp_in_tx values (7); select * from tmp_in_tx
-- @case modes=simple
create temp table tmp_in_tx2(id int); insert into tmp_in_tx2 values ('x')
-- @case modes=simple
select 1
-- @case modes=simple
rollback
-- @case
select count(*) from pg_class where relname in ('tmp_in_tx', 'tmp_in_tx2')
-- ─────────────── a string that controls its own transaction and uses what it creates (a migration file) ───────────────
-- @case modes=simple
begin; create table mig_a(id int primary key); insert into mig_a values (1); alter table mig_a add column v text default 'd'; select * from mig_a; commit; select count(*) from mig_a
-- @case modes=simple
begin; create table mig_b(id int); insert into mig_b values (1); select nope from mig_b; commit
-- @case modes=simple
select 1
-- @case modes=simple
rollback
-- @case modes=simple
create table mig_c(id int); insert into mig_c values (1); select nope from mig_c; select 'never'
-- @case modes=simple
select 1 as one; select nope from accounts
-- @case modes=simple
create table mig_e(id int); commit; insert into mig_e values (5); select * from mig_e
-- @case modes=simple
begin
-- @case modes=simple
create table mig_d(id int); insert into mig_d values (4); commit; select * from mig_d; drop table mig_d
-- @case modes=simple
drop table mig_a, mig_e; select count(*) from pg_class where relname like 'mig\_%'
-- ─────────────── a string that uses what it creates and controls its transaction in another shape (Postgres's implicit block) ───────────────
-- @case modes=simple
create table sc_a(a int); savepoint s; insert into sc_a values (1)
-- @case modes=simple
select count(*) from pg_class where relname = 'sc_a'
-- @case modes=simple
create table sc_b(a int); insert into sc_b values (1); commit
-- @case modes=simple
select * from sc_b
-- @case modes=simple
create table sc_c(a int); insert into sc_c values (1); rollback; select count(*) from pg_class where relname = 'sc_c'
-- @case modes=simple
create table sc_d(a int); insert into sc_d values (1); begin; insert into sc_d values (2); select * from sc_d
-- @case modes=simple
select * from sc_d
-- @case modes=simple
rollback
-- @case modes=simple
select count(*) from pg_class where relname = 'sc_d'
-- @case modes=simple
create table sc_e(a int); insert into sc_e values (1); commit; begin; insert into sc_e values (2); rollback; select * from sc_e
-- @case modes=simple
create table sc_f(a int); insert into sc_f values (1); commit; insert into sc_f values ('x'); select 'never'
-- @case modes=simple
select * from sc_f
-- @case modes=simple
create table sc_g(a int); insert into sc_g values ('x'); commit
-- @case modes=simple
select count(*) from pg_class where relname = 'sc_g'
-- @case modes=simple
create table sc_h(a int); insert into sc_h values (1); commit and chain
-- @case modes=simple
create table sc_i(a int); insert into sc_i values (1); savepoint s
-- @case modes=simple
create table sc_j(a int); insert into sc_j values (1); release s
-- @case modes=simple
create table sc_k(a int); insert into sc_k values (1); rollback to s
-- @case modes=simple
select count(*) from pg_class where relname in ('sc_a', 'sc_h', 'sc_i', 'sc_j', 'sc_k')
-- @case modes=simple
create table sc_l(a int); insert into sc_l values (1); commit; begin; insert into sc_l values (2)
-- @case modes=simple
commit
-- @case modes=simple
select * from sc_l
-- @case modes=simple
begin
-- @case modes=simple
create table sc_m(a int); commit; create table sc_n(a int); insert into sc_n values (1); select * from sc_n
-- @case modes=simple
select count(*) from pg_class where relname in ('sc_m', 'sc_n')
-- @case modes=simple
begin
-- @case modes=simple
create table sc_o(a int); insert into sc_o values (1); rollback; create table sc_p(a int); insert into sc_p values (2); select * from sc_p
-- @case modes=simple
select count(*) from pg_class where relname in ('sc_o', 'sc_p')
-- @case modes=simple
begin
-- @case modes=simple
create table sc_q(a int); savepoint s1; insert into sc_q values (1); rollback to s1; insert into sc_q values (2); release s1; select * from sc_q
-- @case modes=simple
commit
-- @case modes=simple
select * from sc_q
-- @case modes=simple
create table sc_r(a int); insert into sc_r values (1); commit; select * from sc_r; commit; begin; insert into sc_r values (2); commit; select * from sc_r
-- @case modes=simple
drop table sc_b, sc_e, sc_f, sc_l, sc_m, sc_n, sc_p, sc_q, sc_r
-- @case
reset all
-- @case
discard all
-- @case modes=simple
show all
-- @case
select 'still here' as s
