// The policy store: the policy in a `pgwarden` schema of PostgreSQL, with versions, epochs, history and NOTIFY.
import pg from 'pg';
import {
  type PolicyChange,
  PolicyInvalidError,
  policyChanges,
  policyEpoch,
  validatePolicy,
} from './policy-document.js';
import { POLICY_CHANNEL, POLICY_MIGRATIONS } from './policy-migrations.js';
import type { Policy } from './policy-schema.js';
import { policyAtVersion, readCurrent, type StoredPolicy, writeTables } from './policy-tables.js';
import { applyMigrations } from './schema-migrations.js';

/** One entry of the append-only history (issue 19: "who, when, what changed"). */
export interface PolicyVersionEntry {
  readonly version: number;
  readonly epoch: string;
  readonly author: string;
  readonly createdAt: string;
  readonly summary: string;
  readonly changes: readonly PolicyChange[];
}

/** The outcome of {@link PolicyStore.commit}: the policy before and after; `committed` false when nothing changed. */
export interface CommitResult {
  readonly before: StoredPolicy;
  readonly after: StoredPolicy;
  readonly changes: readonly PolicyChange[];
  readonly committed: boolean;
}

/**
 * A write lost an optimistic-concurrency race (issue 19: "the version they read, 409 for the
 * loser"): what it edited changed after the version the writer read.
 */
export class PolicyConflictError extends Error {
  constructor(
    message: string,
    readonly currentVersion: number,
  ) {
    super(message);
    this.name = 'PolicyConflictError';
  }
}

/** The store cannot be reached or migrated; `message` says which database and why (no password). */
export class PolicyStoreUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PolicyStoreUnavailableError';
  }
}

/** What a change function sees: the policy in force, and any earlier version's policy. */
export interface CommitContext {
  readonly current: StoredPolicy;
  /** The policy of `version` from the history (undefined for an unknown version; version 0 is empty). */
  policyAt(version: number): Promise<Policy | undefined>;
}

/** The advisory lock taken by every commit, so commits are serialized across instances. */
const COMMIT_LOCK = 0x70677770; // 'pgwp'

/** `postgres://user:***@host:port/db`: a store URL fit for a message. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * The policy kept in PostgreSQL (issue 19, DESIGN.md "Control plane"). Open with {@link PolicyStore.open}
 * (connects and applies the migrations); read with {@link current}; change with {@link commit}, which
 * validates, writes every table, appends a version to the history and NOTIFYs `pgwarden_policy` in one
 * transaction. Database credentials of the proxied databases never enter the store: the policy has no
 * field for them.
 */
export class PolicyStore {
  private constructor(
    private readonly pool: pg.Pool,
    /** The store's URL with its password masked, for messages. */
    readonly displayUrl: string,
  ) {}

  /**
   * Connects to `url` and applies pending migrations. Throws {@link PolicyStoreUnavailableError} with
   * a clear message when the database cannot be reached or the login may not create the schema.
   */
  static async open(url: string, opts: { connectTimeoutMs?: number } = {}): Promise<PolicyStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: 3,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
      application_name: 'pgwarden policy store',
    });
    pool.on('error', () => {});
    const store = new PolicyStore(pool, redactUrl(url));
    try {
      const client = await pool.connect();
      try {
        await applyMigrations(client, POLICY_MIGRATIONS);
      } finally {
        client.release();
      }
    } catch (e) {
      await pool.end().catch(() => {});
      throw new PolicyStoreUnavailableError(
        `policy store ${store.displayUrl} is unavailable: ${(e as Error).message}`,
      );
    }
    return store;
  }

  /** The policy in force: read from the tables in one snapshot, with the latest version's number. */
  async current(): Promise<StoredPolicy> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const stored = await readCurrent(client);
      await client.query('COMMIT');
      return stored;
    } finally {
      client.release();
    }
  }

  /**
   * Commits a new version: under the commit lock, `change` gets the policy in force and returns the
   * next one (it may throw {@link PolicyConflictError} or {@link PolicyInvalidError}, and nothing is
   * written). The result is validated strictly (PolicyInvalidError with every issue; the store stays
   * unchanged), must hold SCRAM verifiers only, and is written when its epoch differs from the
   * current one: every table replaced, a history row `{version, epoch, author, summary, changes,
   * policy}` appended, and `NOTIFY pgwarden_policy` sent on commit.
   */
  async commit(
    opts: { readonly author: string; readonly summary?: string },
    change: (ctx: CommitContext) => Policy | Promise<Policy>,
  ): Promise<CommitResult> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [COMMIT_LOCK]);
      const before = await readCurrent(client);
      const next = validatePolicy(
        await change({ current: before, policyAt: (v) => policyAtVersion(client, v) }),
      );
      const plain = Object.entries(next.users).filter(([, u]) => u.password !== undefined);
      if (plain.length > 0)
        throw new PolicyInvalidError(
          plain.map(([name]) => ({
            path: `users.${name}.password`,
            parts: ['users', name, 'password'],
            message: 'the policy store keeps SCRAM verifiers only (`pgwarden passwd` makes one)',
          })),
        );
      const epoch = policyEpoch(next);
      if (epoch === before.epoch) {
        await client.query('ROLLBACK');
        return { before, after: before, changes: [], committed: false };
      }
      const changes = policyChanges(before.policy, next);
      await writeTables(client, next);
      const version = before.version + 1;
      const row = await client.query<{ created_at: Date }>(
        `INSERT INTO pgwarden.policy_versions (version, epoch, author, summary, changes, policy)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
        [version, epoch, opts.author, opts.summary ?? '', JSON.stringify(changes), JSON.stringify(next)],
      );
      await client.query('SELECT pg_notify($1, $2)', [POLICY_CHANNEL, JSON.stringify({ version, epoch })]);
      await client.query('COMMIT');
      const after: StoredPolicy = {
        version,
        epoch,
        policy: next,
        author: opts.author,
        createdAt: row.rows[0]?.created_at.toISOString() ?? null,
      };
      return { before, after, changes, committed: true };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {});
      throw e;
    } finally {
      client.release();
    }
  }

  /**
   * The latest committed version from the history alone (one query: what an instance reloads on
   * NOTIFY). The same policy as {@link current} unless the tables were edited by hand.
   */
  async latest(): Promise<StoredPolicy> {
    const r = await this.pool.query<{
      version: string;
      epoch: string;
      policy: unknown;
      author: string;
      created_at: Date;
    }>(
      'SELECT version, epoch, policy, author, created_at FROM pgwarden.policy_versions ORDER BY version DESC LIMIT 1',
    );
    const row = r.rows[0];
    if (!row) return this.current();
    const policy = validatePolicy(row.policy);
    return {
      version: Number(row.version),
      epoch: policyEpoch(policy),
      policy,
      author: row.author,
      createdAt: row.created_at.toISOString(),
    };
  }

  /**
   * The newest version's number and epoch (one indexed row; version 0 and null when nothing was
   * committed): what an instance compares its policy with once a heartbeat (issue 21).
   */
  async head(): Promise<{ version: number; epoch: string | null }> {
    const r = await this.pool.query<{ version: string; epoch: string }>(
      'SELECT version, epoch FROM pgwarden.policy_versions ORDER BY version DESC LIMIT 1',
    );
    const row = r.rows[0];
    return row ? { version: Number(row.version), epoch: row.epoch } : { version: 0, epoch: null };
  }

  /** The history, newest first: at most `limit` entries (1–1000) older than version `before`. */
  async history(opts: { limit?: number; before?: number } = {}): Promise<PolicyVersionEntry[]> {
    const limit = Math.max(1, Math.min(opts.limit ?? 50, 1000));
    const r = await this.pool.query<{
      version: string;
      epoch: string;
      author: string;
      created_at: Date;
      summary: string;
      changes: PolicyChange[];
    }>(
      `SELECT version, epoch, author, created_at, summary, changes FROM pgwarden.policy_versions
       WHERE version < $1 ORDER BY version DESC LIMIT $2`,
      [opts.before ?? Number.MAX_SAFE_INTEGER, limit],
    );
    return r.rows.map((x) => ({
      version: Number(x.version),
      epoch: x.epoch,
      author: x.author,
      createdAt: x.created_at.toISOString(),
      summary: x.summary,
      changes: x.changes,
    }));
  }

  /** The policy of an earlier version (0: the empty policy); undefined when there is no such version. */
  async policyAt(version: number): Promise<Policy | undefined> {
    const client = await this.pool.connect();
    try {
      return await policyAtVersion(client, version);
    } finally {
      client.release();
    }
  }

  /** Closes the store's connections. */
  async close(): Promise<void> {
    await this.pool.end();
  }
}
