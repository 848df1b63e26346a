"""Django (Debian python3-django, psycopg2) on the ORM fixture: argv = URL, step; prints the step's observations as JSON."""
import io
import json
import sys
from urllib.parse import urlparse

import django
from django.conf import settings

url, step = sys.argv[1], sys.argv[2]
u = urlparse(url)
settings.configure(
    DATABASES={"default": {
        "ENGINE": "django.db.backends.postgresql", "NAME": u.path.lstrip("/"), "USER": u.username,
        "PASSWORD": u.password, "HOST": u.hostname, "PORT": u.port,
    }},
    INSTALLED_APPS=[], USE_TZ=True,
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, models, transaction  # noqa: E402


class Item(models.Model):
    name = models.TextField()
    secret = models.TextField(null=True)

    class Meta:
        app_label = "fx"
        db_table = "items"
        managed = False


def introspect():
    out = io.StringIO()
    call_command("inspectdb", "items", "item_names", stdout=out)
    with connection.cursor() as c:
        desc = [(d.name, d.type_code, d.null_ok) for d in connection.introspection.get_table_description(c, "items")]
        constraints = connection.introspection.get_constraints(c, "items")
    return {"inspectdb": out.getvalue(), "description": desc, "constraints": constraints}


def migrate():
    # What `migrate` does for AddField/RemoveField: the schema editor, atomic on PostgreSQL.
    note = models.TextField(default="n", db_index=True)
    note.set_attributes_from_name("note")
    with transaction.atomic():
        with connection.schema_editor() as editor:
            editor.add_field(Item, note)
        with connection.cursor() as c:
            c.execute("SELECT id, note FROM items ORDER BY id")
            up = c.fetchall()
            c.execute("SELECT count(*) FROM item_names")
            up.append(c.fetchone())
    with connection.cursor() as c:
        mid = [d.name for d in connection.introspection.get_table_description(c, "items")]
    with transaction.atomic():
        with connection.schema_editor() as editor:
            editor.remove_field(Item, note)
    with connection.cursor() as c:
        after = [d.name for d in connection.introspection.get_table_description(c, "items")]
    return {"up": up, "mid": mid, "after": after}


def restricted():
    rows = list(Item.objects.order_by("id").values("id", "name", "secret"))
    count = Item.objects.filter(name__startswith="p").count()
    try:
        list(Item.objects.filter(secret="s1").values("id"))
        refused = None
    except Exception as e:  # django.db.utils.ProgrammingError wrapping psycopg2's error
        refused = getattr(e.__cause__, "pgcode", str(e))
    return {"rows": rows, "count": count, "refused": refused}


print(json.dumps({"version": django.get_version(), "result": {"introspect": introspect, "migrate": migrate, "restricted": restricted}[step]()}, default=str))
