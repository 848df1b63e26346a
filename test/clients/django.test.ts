// Django (Debian python3-django with psycopg2) through pgwarden: inspectdb and introspection, a schema-editor migration in a transaction as direct; alice's rows masked.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { describeTool, pythonStep } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';
import { requireTool } from '../helpers/drivers/tools.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../helpers/clients/django_scenario.py',
);
const version = requireTool(
  'Django for /usr/bin/python3',
  [PYTHON, '-c', 'import django, psycopg2; print(django.get_version())'],
  'python3-django python3-psycopg2',
);

const step = (url: string, name: string) => pythonStep(SCRIPT, 'Django', url, name);

describeTool(`Django ${version}`, 'orm_django', {
  introspect: (url) => step(url, 'introspect'),
  migrate: (url) => step(url, 'migrate'),
  restricted: async (url) => {
    expect(await step(url, 'restricted')).toEqual({ rows: MASKED_ITEMS, count: 2, refused: '42501' });
  },
});
