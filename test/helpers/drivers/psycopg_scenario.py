# psycopg 3 scenario through pgwarden: prints what it observed as one JSON object (test/e2e/drivers/psycopg.test.ts).
import json
import sys
import traceback

import psycopg
from psycopg import errors

dba_url, alice_url, table = sys.argv[1], sys.argv[2], sys.argv[3]
out = {"version": psycopg.__version__, "impl": psycopg.pq.__impl__, "libpq": psycopg.pq.version()}


def err(e):
    return {"type": type(e).__name__, "sqlstate": e.sqlstate, "message": str(e.diag.message_primary)}


def section(name, url, fn):
    """Runs one part of the scenario on a fresh connection; an exception is recorded, not fatal."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            out[name] = fn(conn)
    except Exception as e:  # noqa: BLE001 - the test reports it
        out[name] = {"exception": type(e).__name__, "sqlstate": getattr(e, "sqlstate", None), "text": str(e),
                     "trace": traceback.format_exc(limit=2)}


def introspection(conn):
    return {
        "server_version": conn.info.server_version,
        "tables": [r[0] for r in conn.execute(
            "select table_name from information_schema.tables where table_schema = 'public' order by 1")],
        "columns": [list(r) for r in conn.execute(
            "select a.attname, format_type(a.atttypid, a.atttypmod) from pg_attribute a"
            " where a.attrelid = 'public.users'::regclass and a.attnum > 0 and not a.attisdropped"
            " order by a.attnum")],
    }


def queries(conn):
    o = {}
    # Simple query (no parameters) and a parameterized one; text results.
    o["simple"] = conn.execute("select count(*) from users").fetchone()[0]
    o["param_text"] = list(conn.execute("select id, name, org_id from users where id = %s", (3,)).fetchone())
    # Binary results: ints, numerics, dates, arrays decoded from binary.
    with conn.cursor(binary=True) as cur:
        cur.execute("select id, amount, note, date '2024-02-29' as d, array[1,2,3] as arr from orders where id = %s",
                    (5,))
        r = cur.fetchone()
        o["binary"] = [r[0], str(r[1]), r[2], r[3].isoformat(), r[4]]
        o["binary_types"] = [c.type_code for c in cur.description]
    # Server-side prepared statements: prepare=True names one (_pg3_…) and reuses it.
    o["prepared"] = [conn.execute("select name from users where id = %s", (i,), prepare=True).fetchone()[0]
                     for i in (1, 2, 4)]
    o["prepared_server"] = conn.execute(
        "select count(*) from pg_prepared_statements where name like '\\_pg3\\_%%'").fetchone()[0]
    return o


def transaction(conn):
    o = {}
    conn.execute(f"drop table if exists {table}")
    conn.execute(f"create table {table} (id int primary key, v text)")
    try:
        try:
            with conn.transaction():
                conn.execute(f"insert into {table} values (1, 'a')")
                conn.execute(f"insert into {table} values (1, 'dup')")
        except errors.UniqueViolation as e:
            o["tx_error"] = err(e)
        with conn.transaction():
            conn.execute(f"insert into {table} values (2, 'b')")
            try:
                with conn.transaction():  # a savepoint
                    conn.execute("select 1/0")
            except errors.DivisionByZero as e:
                o["savepoint_error"] = err(e)
            conn.execute(f"insert into {table} values (3, 'c')")
        o["after_recovery"] = [list(r) for r in conn.execute(f"select id, v from {table} order by id")]
    finally:
        conn.execute(f"drop table if exists {table}")
    return o


def server_cursors(conn):
    o = {}
    # Named (server-side) cursors: DECLARE, then Describe/FETCH of that portal; text and binary.
    with conn.transaction():
        with conn.cursor(name="orders_cur") as cur:
            cur.itersize = 7
            cur.execute("select id, amount from orders order by id")
            first = cur.fetchmany(3)
            rest = cur.fetchall()
            o["text"] = {"first": [r[0] for r in first], "rest_count": len(rest)}
        with conn.cursor(name="orders_bin", binary=True) as cur:
            cur.execute("select id, user_id from orders where id <= %s order by id", (10,))
            o["binary"] = [list(r) for r in cur.fetchall()]
    return o


def alice_masks(conn):
    o = {}
    # Masked columns arrive as text, also when binary results are asked for.
    o["text"] = list(conn.execute("select id, email, org_id from users where id = %s", (2,)).fetchone())
    with conn.cursor(binary=True) as cur:
        cur.execute("select id, email, org_id from users where id = %s", (2,))
        o["binary"] = list(cur.fetchone())
        o["binary_types"] = [c.type_code for c in cur.description]
    return o


def alice_cursor(conn):
    with conn.transaction():
        with conn.cursor(name="alice_cur", binary=True) as cur:
            cur.execute("select id, ssn, org_id from users order by id")
            return [list(r) for r in cur.fetchmany(2)]


def alice_refused(conn):
    o = {}
    # A refused statement: psycopg's own exception class for 42501; the connection stays usable.
    try:
        conn.execute("select id from users where ssn = %s", ("1",))
        o["refused"] = None
    except psycopg.Error as e:
        o["refused"] = err(e)
    o["after"] = conn.execute("select 1").fetchone()[0]
    return o


section("introspection", dba_url, introspection)
section("queries", dba_url, queries)
section("transaction", dba_url, transaction)
section("server_cursors", dba_url, server_cursors)
section("alice_masks", alice_url, alice_masks)
section("alice_cursor", alice_url, alice_cursor)
section("alice_refused", alice_url, alice_refused)
print(json.dumps(out))
