"""SQLAlchemy (Debian python3-sqlalchemy, psycopg2) on the ORM fixture: argv = URL, step; prints the step's observations as JSON."""
import json
import sys

import sqlalchemy as sa
from sqlalchemy import inspect, text

url, step = sys.argv[1], sys.argv[2]
engine = sa.create_engine(url.replace("postgres://", "postgresql+psycopg2://", 1), poolclass=sa.pool.NullPool)


def introspect():
    i = inspect(engine)
    cols = [{"name": c["name"], "type": str(c["type"]), "nullable": c["nullable"], "default": c["default"]} for c in i.get_columns("items")]
    return {
        "tables": sorted(i.get_table_names()),
        "views": sorted(i.get_view_names()),
        "columns": cols,
        "pk": i.get_pk_constraint("items"),
        "indexes": i.get_indexes("items"),
        "view_definition": i.get_view_definition("item_names"),
    }


def migrate():
    out = []
    md = sa.MetaData()
    with engine.begin() as c:  # one transaction, as Alembic runs a migration on PostgreSQL
        c.execute(text("ALTER TABLE items ADD COLUMN note text DEFAULT 'n'"))
        c.execute(text("CREATE INDEX items_note ON items (note)"))
        items = sa.Table("items", md, autoload_with=c)
        out.append([list(r) for r in c.execute(sa.select(items.c.id, items.c.note).order_by(items.c.id))])
        out.append(c.execute(text("SELECT count(*) FROM item_names")).scalar())
    out.append([c["name"] for c in inspect(engine).get_columns("items")])
    with engine.begin() as c:
        c.execute(text("DROP INDEX items_note"))
        c.execute(text("ALTER TABLE items DROP COLUMN note"))
    out.append([c["name"] for c in inspect(engine).get_columns("items")])
    return out


def restricted():
    md = sa.MetaData()
    items = sa.Table("items", md, autoload_with=engine)
    with engine.connect() as c:
        rows = [dict(r._mapping) for r in c.execute(sa.select(items.c.id, items.c.name, items.c.secret).order_by(items.c.id))]
        n = c.execute(sa.select(sa.func.count()).select_from(items).where(items.c.name.like("p%"))).scalar()
    try:
        with engine.connect() as c:
            c.execute(sa.select(items.c.id).where(items.c.secret == "s1")).all()
        refused = None
    except sa.exc.DBAPIError as e:
        refused = e.orig.pgcode
    return {"rows": rows, "count": n, "refused": refused}


print(json.dumps({"version": sa.__version__, "result": {"introspect": introspect, "migrate": migrate, "restricted": restricted}[step]()}))
