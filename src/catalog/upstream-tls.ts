// TLS towards an upstream PostgreSQL: libpq's sslmode and sslrootcert, for pgwarden's sessions and its catalog reads.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type tls from 'node:tls';
import type pg from 'pg';

/**
 * The sslmodes pgwarden supports towards an upstream (libpq's names, PostgreSQL 15 docs 34.19
 * "SSL Support", table 34.1): `disable` plaintext; `require` encrypted, the certificate not checked;
 * `verify-ca` the chain checked against `sslrootcert`; `verify-full` the chain and the host name.
 * libpq's `allow` and `prefer` fall back to plaintext when the server declines, so they are not offered.
 */
export const UPSTREAM_SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const;
export type UpstreamSslMode = (typeof UPSTREAM_SSL_MODES)[number];

/** What the config says about one upstream database (`databases.<name>`). */
export interface UpstreamDatabase {
  readonly url: string;
  readonly sslmode?: UpstreamSslMode | undefined;
  /** PEM file of the CA(s) to trust, relative to the config file; default: Node's bundled roots. */
  readonly sslrootcert?: string | undefined;
}

/** How to wrap an upstream socket in TLS: the mode, and the options for `tls.connect`. */
export interface UpstreamTls {
  readonly mode: Exclude<UpstreamSslMode, 'disable'>;
  readonly options: tls.ConnectionOptions;
}

/** The sslmode of `db`: its `sslmode` field, else the URL's `sslmode` parameter, else `disable`. */
export function sslModeOf(db: UpstreamDatabase): UpstreamSslMode {
  if (db.sslmode) return db.sslmode;
  const fromUrl = new URL(db.url).searchParams.get('sslmode');
  return (UPSTREAM_SSL_MODES as readonly string[]).includes(fromUrl ?? '')
    ? (fromUrl as UpstreamSslMode)
    : 'disable';
}

/**
 * The TLS options for `db` (undefined for `disable`). `configDir` resolves a relative
 * `sslrootcert`. Throws the fs error when `sslrootcert` cannot be read. `verify-full` checks the
 * certificate against the URL's host (a DNS name or an IP address, as libpq does).
 */
export function upstreamTls(db: UpstreamDatabase, configDir: string): UpstreamTls | undefined {
  const mode = sslModeOf(db);
  if (mode === 'disable') return undefined;
  const host = new URL(db.url).hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  const rootcert = db.sslrootcert ?? new URL(db.url).searchParams.get('sslrootcert') ?? undefined;
  const options: tls.ConnectionOptions = {
    rejectUnauthorized: mode !== 'require',
    ...(rootcert ? { ca: fs.readFileSync(path.resolve(configDir, rootcert)) } : {}),
    ...(net.isIP(host) === 0 ? { servername: host } : {}),
    // verify-ca checks the chain only; verify-full the host name too (Node's default check).
    ...(mode === 'verify-full' ? {} : { checkServerIdentity: () => undefined }),
  };
  return { mode, options };
}

/**
 * A `pg` client config for `db` with the same TLS as the sessions (`upstreamTls`): the URL without
 * its query (so `pg` reads no sslmode of its own) and `ssl` set, plus `extra` (timeouts).
 */
export function pgClientConfig(
  db: UpstreamDatabase,
  configDir: string,
  extra: pg.ClientConfig = {},
): pg.ClientConfig {
  const u = new URL(db.url);
  u.search = '';
  const t = upstreamTls(db, configDir);
  return { ...extra, connectionString: u.toString(), ...(t ? { ssl: t.options } : {}) };
}
