// The zod schema of the policy part of pgwarden.yaml: actions, users, groups, roles, permissions, API keys, workspace settings.
import { z } from 'zod';

/** Row and database actions (seed 004, "Actions"). */
export const DATA_ACTIONS = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'MANAGE', 'SEE'] as const;
/**
 * App-level actions (seed 004, "App-level actions cover workspace administration"), plus
 * `audit_read` and `connect_as_viewer` (a workspace connection reading on behalf of a viewer, seed 001).
 */
export const APP_ACTIONS = [
  'workspace_settings',
  'workspace_users',
  'workspace_roles',
  'workspace_groups',
  'workspace_api_keys',
  'audit_read',
  'connect_as_viewer',
] as const;

export type DataAction = (typeof DATA_ACTIONS)[number];
export type AppAction = (typeof APP_ACTIONS)[number];

/**
 * Role names (seed 000, "Instance role catalog"): 1–63 letters, digits, `_` and `-`; `postgres`,
 * `public`, `pg_*` and `pgwarden_*` (pgwarden's own logins, the set logins `pgwarden_set_*` among
 * them) are reserved, since under `roles: managed` each role is a PostgreSQL role of that name.
 */
const roleName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,63}$/, 'must be 1-63 letters, digits, "_" or "-"')
  .refine((n) => !isReservedRoleName(n), {
    message: 'is reserved (postgres, public and names starting with pg_ or pgwarden_)',
  });

/** True for the names seed 000 and issue 17 reserve: `postgres`, `public`, `pg_*`, `pgwarden_*`. */
export function isReservedRoleName(n: string): boolean {
  const l = n.toLowerCase();
  return l === 'postgres' || l === 'public' || l.startsWith('pg_') || l.startsWith('pgwarden_');
}

/** A principal name (user or group): what a client sends as `user` in its StartupMessage. */
const principalName = z
  .string()
  .regex(/^[A-Za-z0-9_.@-]{1,63}$/, 'must be 1-63 letters, digits, "_", "-", "." or "@"');

const SCRAM_VERIFIER = /^SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/;
const scramVerifier = z
  .string()
  .regex(SCRAM_VERIFIER, 'must be a SCRAM-SHA-256 verifier made by `pgwarden passwd`');

/**
 * One permission rule (seed 004, "Permission levels", "Allow and deny", "Scope").
 * The scope narrows database ⊃ schema ⊃ table ⊃ column; `*` matches any name at that level.
 * App-level actions take no scope. MANAGE is granted on a database only (seed 004: "a rule
 * scoped below the connection never matches"), so a MANAGE rule with a schema, table or column
 * is rejected when the config loads.
 */
export const permissionSchema = z
  .object({
    effect: z.enum(['allow', 'deny']),
    actions: z.array(z.enum([...DATA_ACTIONS, ...APP_ACTIONS])).min(1),
    database: z.string().min(1).optional(),
    schema: z.string().min(1).optional(),
    table: z.string().min(1).optional(),
    column: z.string().min(1).optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    const dataActions = p.actions.filter((a) => (DATA_ACTIONS as readonly string[]).includes(a));
    const appActions = p.actions.filter((a) => (APP_ACTIONS as readonly string[]).includes(a));
    if (dataActions.length > 0 && appActions.length > 0) {
      ctx.addIssue({ code: 'custom', path: ['actions'], message: 'mixes app-level and database actions' });
    }
    if (appActions.length > 0 && (p.database || p.schema || p.table || p.column)) {
      ctx.addIssue({
        code: 'custom',
        path: ['database'],
        message: 'app-level actions take no database scope',
      });
    }
    if (dataActions.length > 0 && !p.database) {
      ctx.addIssue({
        code: 'custom',
        path: ['database'],
        message: 'is required for database actions (use "*")',
      });
    }
    if (p.column && !p.table)
      ctx.addIssue({ code: 'custom', path: ['table'], message: 'is required with column' });
    if (p.table && !p.schema)
      ctx.addIssue({ code: 'custom', path: ['schema'], message: 'is required with table' });
    if (p.actions.includes('MANAGE') && (p.schema || p.table || p.column)) {
      ctx.addIssue({
        code: 'custom',
        path: ['actions'],
        message:
          'MANAGE is granted on a database; a MANAGE rule scoped to a schema, table or column never matches',
      });
    }
  });

/** `u/<user>`, `g/<group>` or `*` (seed 000, "Tenant patterns"). */
const tenantPattern = z
  .string()
  .regex(/^(\*|u\/[A-Za-z0-9_.@-]{1,63}|g\/[A-Za-z0-9_.@-]{1,63})$/, 'must be u/<user>, g/<group> or *');

/** A role (seed 000, "Instance role catalog"): a description, the tenants it applies to, its permission rules. */
export const roleSchema = z
  .object({
    description: z.string().optional(),
    tenants: z.array(tenantPattern).default([]),
    permissions: z.array(permissionSchema).default([]),
  })
  .strict();

/** A user: exactly one of a SCRAM verifier or (demo configs only) a plain password. */
export const userSchema = z
  .object({
    scram: scramVerifier.optional(),
    password: z.string().min(1).optional(),
    disabled: z.boolean().default(false),
  })
  .strict()
  .refine((u) => (u.scram === undefined) !== (u.password === undefined), {
    message: 'needs exactly one of scram (a verifier from `pgwarden passwd`) or password (demo only)',
  });

/** A group (seed 000, "Tenant patterns" g/<group>): its member users. */
export const groupSchema = z.object({ members: z.array(principalName).default([]) }).strict();

/** The longest an API key may live: one year (366 days, so a leap year fits). Source: issue 4. */
export const MAX_KEY_LIFETIME_MS = 366 * 24 * 3600 * 1000;

/** An API key (issue 4): a principal holding exactly its own roles; the token stored as a SCRAM verifier. */
export const apiKeySchema = z
  .object({
    // `pgwarden keys create` makes `pgw_<16 letters or digits>`; a config may name a key itself
    // (the demo's `agent`). It is the user name on the wire, so it follows the principal-name rule.
    id: z.string().regex(/^[A-Za-z0-9_-]{3,63}$/, 'must be 3-63 letters, digits, "_" or "-"'),
    scram: scramVerifier,
    /** The previous token's verifier, valid until `previous_expires_at` (rotation keeps it 24 h). */
    previous_scram: scramVerifier.optional(),
    previous_expires_at: z.string().datetime().optional(),
    roles: z.array(roleName).min(1),
    /** What the key is for, shown by `pgwarden keys list`. */
    description: z.string().max(200).optional(),
    created_at: z.string().datetime().optional(),
    /** Never (null), or at most one year after `created_at` (issue 4). */
    expires_at: z.string().datetime().nullable().default(null),
    revoked: z.boolean().default(false),
  })
  .strict()
  .superRefine((k, ctx) => {
    if (k.expires_at !== null && k.created_at !== undefined) {
      const span = Date.parse(k.expires_at) - Date.parse(k.created_at);
      if (span > MAX_KEY_LIFETIME_MS)
        ctx.addIssue({
          code: 'custom',
          path: ['expires_at'],
          message: 'is more than one year after created_at (an API key expires never or within a year)',
        });
    }
    if ((k.previous_scram === undefined) !== (k.previous_expires_at === undefined))
      ctx.addIssue({
        code: 'custom',
        path: ['previous_scram'],
        message: 'previous_scram and previous_expires_at go together',
      });
  });

/**
 * Workspace settings (seed 004, "Workspace settings: Edit workspace name, git remote, and settings"):
 * what the `workspace_settings` app-level action edits through the admin API.
 */
export const workspaceSettingsSchema = z
  .object({
    name: z.string().min(1).max(100).optional(),
    git_remote: z.string().min(1).max(500).optional(),
  })
  .strict();

/**
 * The fields of the config that make up the policy (issue 19): what the policy store keeps, what
 * `pgwarden policy export/import` writes and reads, and what the admin API edits. Everything else
 * (listener, TLS, limits, databases with their credentials) stays in the instance's own file.
 */
export const policyShape = {
  workspace: workspaceSettingsSchema.default({}),
  users: z.record(principalName, userSchema).default({}),
  groups: z.record(principalName, groupSchema).default({}),
  workspace_admins: z.array(principalName).default([]),
  default_role: roleName.nullable().default(null),
  roles: z.record(roleName, roleSchema).default({}),
  api_keys: z.array(apiKeySchema).default([]),
};

/** The names of {@link policyShape}'s fields, in the order `pgwarden policy export` writes them. */
export const POLICY_FIELDS = Object.keys(policyShape) as (keyof typeof policyShape)[];

type PolicyFields = z.infer<z.ZodObject<typeof policyShape>>;

/**
 * The cross-references of a policy, each a zod issue at its path: the default role, every API key's
 * roles and every group member must exist. With `strict` (the policy store and the admin API, issue
 * 19: "unknown roles in tenants, a dangling group" are refused), every tenant must name a user or a
 * group of the policy and every workspace admin a user; a config file only warns about those
 * (config-load.ts), so that existing files keep loading.
 */
export function checkPolicyReferences(c: PolicyFields, ctx: z.RefinementCtx, strict: boolean): void {
  if (c.default_role !== null && !Object.hasOwn(c.roles, c.default_role)) {
    ctx.addIssue({
      code: 'custom',
      path: ['default_role'],
      message:
        c.default_role === 'admin'
          ? 'names no role "admin": pgwarden has no built-in admin role; define roles.admin or choose another default'
          : `names no role "${c.default_role}"`,
    });
  }
  c.api_keys.forEach((k, i) => {
    k.roles.forEach((r, j) => {
      if (!Object.hasOwn(c.roles, r))
        ctx.addIssue({ code: 'custom', path: ['api_keys', i, 'roles', j], message: `names no role "${r}"` });
    });
  });
  for (const [g, group] of Object.entries(c.groups)) {
    group.members.forEach((m, j) => {
      if (!Object.hasOwn(c.users, m))
        ctx.addIssue({ code: 'custom', path: ['groups', g, 'members', j], message: `names no user "${m}"` });
    });
  }
  if (!strict) return;
  for (const [name, role] of Object.entries(c.roles)) {
    role.tenants.forEach((t, j) => {
      const who = t.slice(2);
      const missing = t.startsWith('u/')
        ? !Object.hasOwn(c.users, who)
        : t.startsWith('g/') && !Object.hasOwn(c.groups, who);
      if (missing)
        ctx.addIssue({
          code: 'custom',
          path: ['roles', name, 'tenants', j],
          message: `names no ${t.startsWith('u/') ? 'user' : 'group'} "${who}"`,
        });
    });
  }
  c.workspace_admins.forEach((a, j) => {
    if (!Object.hasOwn(c.users, a))
      ctx.addIssue({ code: 'custom', path: ['workspace_admins', j], message: `names no user "${a}"` });
  });
}

/** The policy alone, validated strictly (the store, `policy import`, the admin API). */
export const policySchema = z
  .object(policyShape)
  .strict()
  .superRefine((c, ctx) => checkPolicyReferences(c, ctx, true));
/** One permission rule, validated (see {@link permissionSchema}). */
export type Permission = z.infer<typeof permissionSchema>;
/** A role: its tenants and permission rules (see {@link roleSchema}). */
export type Role = z.infer<typeof roleSchema>;
/** An API key, validated (see {@link apiKeySchema}). */
export type ApiKey = z.infer<typeof apiKeySchema>;
/** The policy part of a config (issue 19), defaults filled in. */
export type Policy = z.infer<typeof policySchema>;
/** The workspace settings (see {@link workspaceSettingsSchema}). */
export type WorkspaceSettings = z.infer<typeof workspaceSettingsSchema>;
