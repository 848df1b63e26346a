// The programs the client suites drive that npm cannot install: each with the check that proves it is there and its Debian package.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

/** One external program a suite under test/clients needs. */
export interface RequiredTool {
  /** What it is, as the failure message names it. */
  readonly what: string;
  /** A command that exits 0 only when the tool is usable, or a file that must be readable. */
  readonly check: readonly string[] | { readonly readable: string };
  /** The Debian package that provides it (`apt-get install -y <package>`). */
  readonly debianPackage: string;
}

/** Every tool `npm run test:clients` needs; .ci/run installs these packages. */
export const REQUIRED_TOOLS: readonly RequiredTool[] = [
  { what: 'psql 15', check: ['psql', '--version'], debianPackage: 'postgresql-client-15' },
  { what: 'pg_dump 15', check: ['pg_dump', '--version'], debianPackage: 'postgresql-client-15' },
  {
    what: 'openssl (makes the TLS test certificate)',
    check: ['openssl', 'version'],
    debianPackage: 'openssl',
  },
  {
    what: 'psycopg 3 for /usr/bin/python3',
    check: ['/usr/bin/python3', '-c', 'import psycopg'],
    debianPackage: 'python3-psycopg',
  },
  {
    what: 'SQLAlchemy with psycopg2 for /usr/bin/python3',
    check: ['/usr/bin/python3', '-c', 'import sqlalchemy, psycopg2'],
    debianPackage: 'python3-sqlalchemy python3-psycopg2',
  },
  {
    what: 'Django with psycopg2 for /usr/bin/python3',
    check: ['/usr/bin/python3', '-c', 'import django, psycopg2'],
    debianPackage: 'python3-django python3-psycopg2',
  },
  { what: 'pgcli 3.5', check: ['pgcli', '--version'], debianPackage: 'pgcli' },
  {
    what: 'HAProxy (/usr/sbin/haproxy: the fleet test balances three instances)',
    check: ['/usr/sbin/haproxy', '-v'],
    debianPackage: 'haproxy',
  },
  {
    what: 'pgbench 15 (/usr/bin/pgbench: the fleet test drives it through HAProxy)',
    check: ['/usr/bin/pgbench', '--version'],
    debianPackage: 'postgresql-15',
  },
  { what: 'a JDK (java 17+)', check: ['java', '-version'], debianPackage: 'openjdk-17-jdk-headless' },
  {
    what: 'pgjdbc (/usr/share/java/postgresql.jar)',
    check: { readable: '/usr/share/java/postgresql.jar' },
    debianPackage: 'libpostgresql-jdbc-java',
  },
  {
    what: 'Chromium (/usr/bin/chromium, driven by playwright-core for the web console suite)',
    check: ['/usr/bin/chromium', '--headless', '--no-sandbox', '--disable-gpu', '--version'],
    debianPackage: 'chromium',
  },
];

/** The tools of `tools` whose check fails here, each with why. */
export function missingTools(
  tools: readonly RequiredTool[] = REQUIRED_TOOLS,
): { tool: RequiredTool; why: string }[] {
  const missing: { tool: RequiredTool; why: string }[] = [];
  for (const tool of tools) {
    if ('readable' in tool.check) {
      try {
        fs.accessSync(tool.check.readable, fs.constants.R_OK);
      } catch (e) {
        missing.push({ tool, why: (e as Error).message });
      }
      continue;
    }
    const [cmd, ...args] = tool.check;
    if (!cmd) continue;
    const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000 });
    if (r.error || r.status !== 0)
      missing.push({ tool, why: r.error?.message ?? (r.stderr.trim() || `exit ${r.status}`) });
  }
  return missing;
}

/** How a tool's check reads in a message: the command in backquotes, or the file it reads. */
function describeCheck(tool: RequiredTool): string {
  return 'readable' in tool.check ? `reading ${tool.check.readable}` : `\`${tool.check.join(' ')}\``;
}

/**
 * The message of a run that lacks `missing` (undefined when nothing is missing): each tool with
 * why its check failed, then one apt-get command installing every package.
 */
export function missingToolsMessage(
  missing: readonly { tool: RequiredTool; why: string }[],
): string | undefined {
  if (missing.length === 0) return undefined;
  const packages = [...new Set(missing.map((m) => m.tool.debianPackage))];
  return [
    'npm run test:clients needs programs that npm cannot install:',
    ...missing.map((m) => `  - ${m.tool.what}: ${describeCheck(m.tool)} failed (${m.why})`),
    `Install them with: apt-get install -y ${packages.join(' ')}   (.ci/run does this; these suites never skip)`,
  ].join('\n');
}

/** Vitest global setup of `npm run test:clients`: fails the whole run, never skipping a suite, when a tool is missing. */
export default function requireTools(): void {
  const message = missingToolsMessage(missingTools());
  if (message) throw new Error(message);
}
