// The zod schema of pgwarden.yaml: listener, TLS, limits, logs, databases, policy store and fleet, with the policy fields of policy-schema.ts.
import { z } from 'zod';
import { UPSTREAM_SSL_MODES } from '../catalog/upstream-tls.js';
import { checkPolicyReferences, isReservedRoleName, policyShape } from './policy-schema.js';

/** `host:port`; port 0 asks the kernel for one (tests). */
const hostPort = z.string().regex(/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port');

/**
 * A log's destination (`audit`, `log`): stderr by default, or `file` (relative to the config file)
 * appended to and reopened on SIGHUP (logrotate's convention); with `max_size_bytes`, rotated by
 * size to `file.1` … `file.<keep>` (src/log-file.ts).
 */
const logFileSchema = z
  .object({
    file: z.string().min(1).optional(),
    max_size_bytes: z.number().int().min(4096).optional(),
    keep: z.number().int().min(1).max(1000).default(5),
  })
  .strict()
  .refine((l) => l.max_size_bytes === undefined || l.file !== undefined, {
    message: 'max_size_bytes needs a file',
    path: ['max_size_bytes'],
  })
  .default({ keep: 5 });

const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL');

/**
 * The upstream database a client-facing name maps to; credentials stay here (`${ENV}` allowed).
 * `roles` (issue 17): `single` logs every session in as the `url` login; `managed` makes each
 * workspace role a PostgreSQL role and logs each session in as its role set's login
 * (`pgwarden_set_<hash>`), holding grants computed from the rules. Managed needs an administration
 * login (`admin_url`, else `url`) with CREATEROLE that owns the tables or holds their grant option.
 * `role_prefix` is put before every workspace role's name upstream (several workspaces on one cluster).
 * `sslmode` (disable, require, verify-ca, verify-full; libpq's meanings) and `sslrootcert` (a PEM
 * file relative to the config) say how pgwarden's own connections to it are encrypted; the URL's
 * `sslmode`/`sslrootcert` parameters count when the fields are absent.
 */
export const databaseSchema = z
  .object({
    url: postgresUrl,
    sslmode: z.enum(UPSTREAM_SSL_MODES).optional(),
    sslrootcert: z.string().min(1).optional(),
    roles: z.enum(['single', 'managed']).default('single'),
    admin_url: postgresUrl.optional(),
    role_prefix: z
      .string()
      .regex(
        /^[A-Za-z][A-Za-z0-9_-]{0,29}$/,
        'must be 1-30 letters, digits, "_" or "-", starting with a letter',
      )
      .refine((p) => !isReservedRoleName(p), {
        message: 'is reserved (names starting with pg_ or pgwarden_)',
      })
      .optional(),
  })
  .strict()
  .superRefine((d, ctx) => {
    const m = /[?&]sslmode=([^&]*)/.exec(d.url)?.[1];
    if (m !== undefined && !(UPSTREAM_SSL_MODES as readonly string[]).includes(m))
      ctx.addIssue({
        code: 'custom',
        path: ['url'],
        message: `sslmode=${m} is not supported (use ${UPSTREAM_SSL_MODES.join(', ')})`,
      });
  });

/**
 * The whole pgwarden.yaml (docs/configuration.md): the instance's own fields and the policy's
 * ({@link policyShape}), cross-references checked by checkPolicyReferences, not strict (a tenant or
 * workspace admin naming nobody is only warned about, config-load.ts).
 */
export const configSchema = z
  .object({
    listen: hostPort.default('127.0.0.1:6432'),
    /** Who holds the credentials (seed 004, "Databases nobody has written a rule for"). */
    mode: z.enum(['proxified', 'local']).default('proxified'),
    /** A demo config may hold plain passwords; nothing else may. */
    demo: z.boolean().default(false),
    /**
     * TLS for clients: the certificate and key (PEM files relative to the config) and `mode`:
     * `allow` (a client may encrypt or not) or `require` (a client that did not encrypt is refused
     * with FATAL 28000 after its StartupMessage, as a `hostssl`-only pg_hba.conf would).
     */
    tls: z
      .object({ cert: z.string(), key: z.string(), mode: z.enum(['allow', 'require']).default('allow') })
      .strict()
      .optional(),
    limits: z
      .object({
        max_client_connections: z.number().int().positive().default(1000),
        max_message_bytes: z
          .number()
          .int()
          .min(1 << 16)
          .default(64 << 20),
        auth_failure_delay_ms: z.number().int().min(0).default(500),
        shutdown_grace_ms: z.number().int().min(0).default(10_000),
        /**
         * After the grace period, how long a statement still running has to answer the CancelRequest
         * pgwarden sends for it before its upstream session is terminated (issue 16 item 1).
         */
        shutdown_cancel_wait_ms: z.number().int().min(0).default(5_000),
        connect_timeout_ms: z.number().int().positive().default(10_000),
        /**
         * How long a client has from its first byte to a completed login (PostgreSQL's
         * authentication_timeout, here 10 s by default); then FATAL and closed.
         */
        authentication_timeout_ms: z.number().int().positive().default(10_000),
        /**
         * Connections still logging in, counted apart from `max_client_connections` (which counts
         * logged-in sessions): at most this many at once, and at most `max_pending_per_address`
         * from one client address. Over either, FATAL 53300 at once (issue 16 item 5).
         */
        max_pending_connections: z.number().int().positive().default(256),
        max_pending_per_address: z.number().int().positive().default(128),
        /**
         * Bytes of large messages (1 MiB and over) all sessions may hold in memory at once, both
         * directions (issue 16 item 2); absent: a quarter of the machine's memory (or of the cgroup
         * limit). A socket whose next message does not fit is not read until it does; a client
         * message larger than the whole budget is refused with 53200, that message only. Read at start.
         */
        memory_budget_bytes: z
          .number()
          .int()
          .min(1 << 20)
          .optional(),
        /**
         * How long a large message may wait for the memory budget (ms): a client message then gets
         * ERROR 53200, that message only; an upstream one ends the session with FATAL 53200. Read at start.
         */
        memory_wait_ms: z.number().int().positive().default(60_000),
        /**
         * Largest statement text handed to the SQL parser, in bytes, after string literals of 1 KiB
         * and over in places no analysis reads are set aside; a longer one is refused with 54000
         * (issue 16 item 2). Dense SQL costs about 3 to 6 s of analysis per MiB. Read at start.
         */
        max_analysis_bytes: z
          .number()
          .int()
          .min(1024)
          .default(1 << 20),
        /**
         * `pgwarden mcp`: the statement_timeout of every statement a tool runs (ms; 0: none). A
         * statement past it is canceled by PostgreSQL (57014) and the tool call fails with it.
         * Read at start.
         */
        mcp_statement_timeout_ms: z.number().int().min(0).default(60_000),
        /**
         * `pgwarden mcp`: how long a tool call waits for a connection of its key's pool (ms): a
         * free one (then the call fails with 53300 too_many_connections), or a new login (08006).
         * Read at start.
         */
        mcp_pool_wait_ms: z.number().int().positive().default(10_000),
      })
      .strict()
      .default({}),
    catalog: z
      .object({ ttl_seconds: z.number().int().positive().default(300) })
      .strict()
      .default({}),
    audit: logFileSchema,
    /** Where the process log goes (default stderr): a file, as `audit`. */
    log: logFileSchema,
    databases: z.record(
      z.string().regex(/^[A-Za-z0-9_-]{1,63}$/, 'database names: letters, digits, _ and -'),
      databaseSchema,
    ),
    /**
     * Keep the policy in a `pgwarden` schema of this PostgreSQL database instead of this file
     * (issue 19); `${ENV}` allowed. The file then holds no policy field.
     */
    policy_store: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
      .optional(),
    /**
     * A file where the last good policy read from the store is kept; `serve` starts from it when the
     * store cannot be reached at start (issue 19). Relative to the config file.
     */
    policy_cache: z.string().min(1).optional(),
    /**
     * With `policy_store`: how instances of a fleet find each other (cancel forwarding, issue 21)
     * and how far an instance's policy may lag the store before it refuses statements.
     */
    fleet: z
      .object({
        /** The `host:port` other instances forward CancelRequests to (default: `listen`, unless a wildcard). */
        advertise: hostPort.optional(),
        /** How often the instance renews its row in `pgwarden.fleet_instances` and checks its policy against the store. */
        heartbeat_ms: z.number().int().min(100).max(60_000).default(1000),
        /** How long a row lives without a heartbeat (a killed instance's slot is free after this). */
        instance_ttl_ms: z.number().int().min(300).max(600_000).default(5000),
        /** How long the policy in force may go unconfirmed by the store before statements are refused (57P03). */
        max_policy_lag_ms: z.number().int().min(200).default(10_000),
      })
      .strict()
      .default({}),
    ...policyShape,
    /** A keys file beside the config (`pgwarden keys …` edits it); relative to the config file. */
    keys_file: z.string().optional(),
    /** NAME=value lines that `${NAME}` reads when the environment lacks NAME; relative to the config file. */
    env_file: z.string().optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const [host] = splitHostPort(c.listen);
    if (c.mode === 'local' && !isLoopback(host)) {
      ctx.addIssue({
        code: 'custom',
        path: ['mode'],
        message: 'local is allowed only when listen is on loopback',
      });
    }
    for (const [name, user] of Object.entries(c.users)) {
      if (user.password !== undefined && !c.demo) {
        ctx.addIssue({
          code: 'custom',
          path: ['users', name, 'password'],
          message: 'plain passwords are allowed only in a demo config; use scram from `pgwarden passwd`',
        });
      }
    }
    if (c.policy_store !== undefined && c.keys_file !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['keys_file'],
        message: 'API keys live in the policy store when policy_store is set (the admin API edits them)',
      });
    if (c.fleet.instance_ttl_ms < 2 * c.fleet.heartbeat_ms)
      ctx.addIssue({
        code: 'custom',
        path: ['fleet', 'instance_ttl_ms'],
        message: 'must be at least twice fleet.heartbeat_ms (a row must outlive a late heartbeat)',
      });
    if (c.fleet.max_policy_lag_ms <= c.fleet.heartbeat_ms)
      ctx.addIssue({
        code: 'custom',
        path: ['fleet', 'max_policy_lag_ms'],
        message: 'must exceed fleet.heartbeat_ms (the policy is confirmed once a heartbeat)',
      });
    if (c.policy_cache !== undefined && c.policy_store === undefined)
      ctx.addIssue({ code: 'custom', path: ['policy_cache'], message: 'needs policy_store' });
    checkPolicyReferences(c, ctx, false);
    if (Object.hasOwn(c.databases, 'pgwarden'))
      ctx.addIssue({
        code: 'custom',
        path: ['databases', 'pgwarden'],
        message: 'is the name of the wire admin console (psql -d pgwarden): give the database another name',
      });
    for (const [db, d] of Object.entries(c.databases)) {
      if (d.roles !== 'managed') continue;
      for (const r of Object.keys(c.roles)) {
        if ((d.role_prefix ?? '').length + r.length > 63)
          ctx.addIssue({
            code: 'custom',
            path: ['databases', db, 'role_prefix'],
            message: `with role "${r}" makes a PostgreSQL role name longer than 63 characters`,
          });
      }
    }
  });

/** The validated configuration, with defaults filled in. */
export type Config = z.infer<typeof configSchema>;

/** Splits `host:port` (IPv6 in brackets) into its parts; the port as a number. */
export function splitHostPort(s: string): [string, number] {
  const i = s.lastIndexOf(':');
  const host = s.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return [host, Number(s.slice(i + 1))];
}

/** True for 127.0.0.0/8, ::1 and `localhost`. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
