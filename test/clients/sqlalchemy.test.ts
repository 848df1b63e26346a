// SQLAlchemy (Debian python3-sqlalchemy with psycopg2) through pgwarden: its inspector and a migration in a transaction as direct; alice's rows masked.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { describeTool, pythonStep } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';
import { requireTool } from '../helpers/drivers/tools.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../helpers/clients/sqlalchemy_scenario.py',
);
const version = requireTool(
  'SQLAlchemy for /usr/bin/python3',
  [PYTHON, '-c', 'import sqlalchemy, psycopg2; print(sqlalchemy.__version__)'],
  'python3-sqlalchemy python3-psycopg2',
);

const step = (url: string, name: string) => pythonStep(SCRIPT, 'SQLAlchemy', url, name);

describeTool(`SQLAlchemy ${version}`, 'orm_sqlalchemy', {
  introspect: (url) => step(url, 'introspect'),
  migrate: (url) => step(url, 'migrate'),
  restricted: async (url) => {
    expect(await step(url, 'restricted')).toEqual({ rows: MASKED_ITEMS, count: 2, refused: '42501' });
  },
});
