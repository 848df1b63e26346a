// Checks who the proxy logs in as upstream: a superuser login is warned about at start.
import pg from 'pg';
import { pgClientConfig, type UpstreamDatabase } from './upstream-tls.js';

/** What `serve` learns about one configured upstream at start. */
export interface UpstreamLoginInfo {
  readonly user: string;
  readonly superuser: boolean;
  readonly serverVersionNum: number;
}

/**
 * Connects with `url` (the config's server-held credentials; or a `pg` config with the database's
 * TLS) and reads `current_user`, its `rolsuper` and `server_version_num`. Rejects with pg's error
 * (its SQLSTATE in `code`) when the upstream cannot be reached or refuses the login.
 */
export async function inspectUpstreamLogin(url: string | pg.ClientConfig): Promise<UpstreamLoginInfo> {
  const client = new pg.Client({
    ...(typeof url === 'string' ? { connectionString: url } : url),
    connectionTimeoutMillis: 10_000,
  });
  await client.connect();
  try {
    const r = await client.query<{ user: string; superuser: boolean; version: string }>(
      `SELECT current_user AS user, r.rolsuper AS superuser, current_setting('server_version_num') AS version
         FROM pg_roles r WHERE r.rolname = current_user`,
    );
    const row = r.rows[0];
    if (!row) throw new Error('current_user has no pg_roles row');
    return { user: row.user, superuser: row.superuser, serverVersionNum: Number(row.version) };
  } finally {
    await client.end();
  }
}

/**
 * One warning per configured database whose upstream login is a superuser, or that cannot be
 * reached now (`serve` logs them; the proxy must never hold superuser credentials).
 * `databases` maps the client-facing name to the upstream URL and TLS settings (`configDir` resolves
 * a relative `sslrootcert`). Never rejects.
 */
export async function upstreamLoginWarnings(
  databases: Readonly<Record<string, UpstreamDatabase>>,
  configDir = '.',
): Promise<string[]> {
  const out: string[] = [];
  for (const [name, db] of Object.entries(databases)) {
    try {
      const info = await inspectUpstreamLogin(pgClientConfig(db, configDir));
      if (info.superuser) {
        out.push(
          `database ${name}: the upstream login "${info.user}" is a superuser; use a role without superuser rights`,
        );
      }
    } catch (e) {
      out.push(`database ${name}: upstream not reachable now (${(e as Error).message})`);
    }
  }
  return out;
}
