// The pgwarden command line: serve, demo (npm start), passwd, check, keys, policy, replay, mcp. The commander table only; each action lives in src/cli/.
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { checkAction } from './cli/check-action.js';
import { DEMO_ADMIN, DEMO_LISTEN, demoAction } from './cli/demo-action.js';
import { keysCreateAction, keysListAction, keysRevokeAction, keysRotateAction } from './cli/keys-actions.js';
import { mcpAction } from './cli/mcp-action.js';
import { passwdAction } from './cli/passwd-action.js';
import { policyExportAction, policyHistoryAction, policyImportAction } from './cli/policy-actions.js';
import { replayAction } from './cli/replay-action.js';
import { serveAction } from './cli/serve-action.js';

/** The `version` of package.json. */
function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

const program = new Command();
program
  .name('pgwarden')
  .description('SQL-aware permission proxy for PostgreSQL')
  .version(packageVersion(), '-V, --version', 'print the version of pgwarden');

program
  .command('serve')
  .description('run the proxy with a config file')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--pretty', 'human-readable logs instead of JSON')
  .option(
    '--admin <host:port>',
    'serve the admin API (JSON over HTTP, /api/openapi.json) here; off by default',
  )
  .option('--workers <n>', 'run N worker processes sharing the listening socket (node:cluster)', '1')
  .action(serveAction);

program
  .command('demo')
  .description(
    'start an embedded PostgreSQL 15 with the demo database and the proxy on 127.0.0.1:6432 (npm start)',
  )
  .option('--data <dir>', 'data directory of the embedded PostgreSQL', '.pgwarden/data')
  .option('--pretty', 'human-readable logs instead of JSON', true)
  .option('--json', 'JSON logs')
  .option('--listen <host:port>', `listen address instead of the demo config's ${DEMO_LISTEN}`)
  .option(
    '--admin <host:port>',
    `admin API and web console address (default ${DEMO_ADMIN}, or any free port)`,
  )
  .option(
    '--record <file>',
    "where to record the ports the demo uses (default: the demo config's env_file, .pgwarden/demo.env)",
  )
  .action(demoAction);

program
  .command('passwd')
  .description(
    'read a password (asked twice on a terminal, else one line of stdin) and print its SCRAM-SHA-256 verifier for the config (users.<name>.scram)',
  )
  .option('--iterations <n>', 'PBKDF2 iterations', '4096')
  .action(passwdAction);

program
  .command('check')
  .description('show what a user may do with a SQL string: verdict, masked columns, the rules that decided')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .requiredOption('-u, --user <name>', 'a user or API key id of the config')
  .option('-r, --role <name>', 'the role the connection names (pgwarden.role)')
  .option('-d, --database <name>', 'the database (default: the only one configured)')
  .option('--json', 'JSON output')
  .argument('<sql>', 'the SQL string, one or more statements')
  .action(checkAction);

const keys = program
  .command('keys')
  .description(
    'create, rotate, revoke and list API keys (in the keys file beside the config, or the policy store it names)',
  );
keys
  .command('create')
  .description('create a key holding exactly the given roles; prints its token once')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml (its keys_file, or its policy_store, is edited)')
  .requiredOption('-r, --role <name...>', 'role(s) the key holds')
  .option('--expires <when>', 'never, <n>d, <n>h or an ISO date; at most one year', '90d')
  .option('--description <text>', 'what the key is for')
  .option('--json', 'JSON output')
  .action(keysCreateAction);
keys
  .command('rotate')
  .description('give a key a new token; the old one stays valid for 24 hours')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--json', 'JSON output')
  .argument('<id>', 'the key id (pgw_…)')
  .action(keysRotateAction);
keys
  .command('revoke')
  .description('revoke a key')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--json', 'JSON output')
  .argument('<id>', 'the key id (pgw_…)')
  .action(keysRevokeAction);
keys
  .command('list')
  .description('list the keys: roles, status, expiry, rotation window')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--json', 'JSON output')
  .action(keysListAction);

const policy = program
  .command('policy')
  .description(
    'the policy kept in the policy_store: export it as YAML, import YAML into it, show its history',
  );
policy
  .command('export')
  .description("write the store's current policy as YAML (stdout, or --output)")
  .requiredOption('-c, --config <file>', 'pgwarden.yaml naming policy_store')
  .option('-o, --output <file>', 'write here (mode 0600) instead of stdout')
  .action(policyExportAction);
policy
  .command('import')
  .description("replace the store's policy by a YAML file's (a policy file or a pgwarden.yaml)")
  .requiredOption('-c, --config <file>', 'pgwarden.yaml naming policy_store')
  .option('-m, --summary <text>', 'what the change is, for the history')
  .argument('<file>', 'the YAML file to load')
  .action(policyImportAction);
policy
  .command('history')
  .description('the versions of the policy, newest first: version, time, author, epoch, changes')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml naming policy_store')
  .option('-n, --limit <n>', 'how many', '20')
  .action(policyHistoryAction);

program
  .command('replay')
  .description(
    'decide the statements of an audit log again under a proposed policy; list every verdict that changes',
  )
  .requiredOption('-c, --config <file>', 'the proposed pgwarden.yaml')
  .requiredOption('-a, --audit <file>', 'the audit log (JSON lines)')
  .option('--current <file>', "compare with this config's decisions instead of the recorded verdicts")
  .option('--json', 'JSON output')
  .action(replayAction);

program
  .command('mcp')
  .description(
    'serve MCP to AI agents as an API key: stdio (PGWARDEN_API_KEY), or Streamable HTTP with --http',
  )
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option(
    '--http <host:port>',
    'serve Streamable HTTP at http://HOST:PORT/mcp (Authorization: Bearer <token>)',
  )
  .action(mcpAction);

await program.parseAsync(process.argv);
