// A session's upstream login: the role set's login under `roles: managed` (else the url's), its startup options, and what the client may learn of a failure.
import type { Logger } from 'pino';
import type { UpstreamTls } from '../catalog/upstream-tls.js';
import type { Config } from '../policy/config-schema.js';
import { type ManagedRoles, ManagedRolesError, type SetLogin } from '../roles/managed-roles.js';
import { ClientError, fatal } from './client-error.js';
import { connectUpstream, UpstreamError, type UpstreamSession, type UpstreamTarget } from './upstream.js';

/** SQLSTATEs of an upstream login failure that pass to the client as they are (capacity and availability). */
const PASSING_LOGIN_FAILURES = ['53300', '57P03', '3D000', '08006'];

/** An open upstream session and the login it is open as. */
export interface UpstreamLogin {
  readonly upstream: UpstreamSession;
  /** The target as logged in: the url's, with the set login's user and password under `roles: managed`. */
  readonly target: UpstreamTarget;
  /** The set login (`pgwarden_set_<hash>`) logged in as; undefined when the url's login is used. */
  readonly setLogin: SetLogin | undefined;
}

/** What to log in upstream for: the session's database, its roles and identity, its startup parameters. */
export interface UpstreamLoginRequest {
  readonly config: Config;
  readonly database: string;
  /** The database's url target (config `databases.<name>.url`). */
  readonly target: UpstreamTarget;
  readonly secure: UpstreamTls | undefined;
  readonly roles: readonly string[];
  /** The caller's identity (the viewer's, when one is named), set as `pgwarden.identity`. */
  readonly identity: string;
  /** The startup parameters that pass upstream (startup-params.ts). */
  readonly params: ReadonlyMap<string, string>;
}

/** Escapes a value for the `options` startup parameter (pg_split_opts: backslash escapes, space separates). */
function escapeOption(v: string): string {
  return v.replace(/[\\\s]/g, (c) => `\\${c}`);
}

/**
 * Logs in upstream for one session (DESIGN.md "Three walls" 3, issue 17): as the set login of the
 * role set under `roles: managed`, else as the url's login; `pgwarden.identity` and
 * `pgwarden.roles` go into `options` as the session's reset values (RESET ALL and DISCARD ALL bring
 * them back), for row-level security per viewer (issue 8). A set login whose password was changed
 * behind pgwarden's back (28P01) is taken back and tried once more. Rejects with ClientError: a
 * ManagedRolesError's SQLSTATE; the upstream's own FATAL for 53300, 57P03, 3D000, 08006; any
 * other login failure as 08006 with a message that names neither the login nor the reason (those
 * are logged: the upstream login is the proxy's, not the client's).
 */
export async function logInUpstream(
  managed: ManagedRoles,
  request: UpstreamLoginRequest,
  connectTimeoutMs: number,
  log: Logger,
): Promise<UpstreamLogin> {
  const { config, database, secure, roles } = request;
  let target = request.target;
  let setLogin: SetLogin | undefined;
  try {
    setLogin = await managed.loginFor(config, database, roles);
  } catch (e) {
    if (e instanceof ManagedRolesError) throw fatal(e.sqlstate, e.message);
    throw e;
  }
  if (setLogin) target = { ...target, user: setLogin.user, password: setLogin.password };
  let upstream: UpstreamSession;
  const params = new Map(request.params);
  params.set(
    'options',
    `-c pgwarden.identity=${escapeOption(request.identity)} -c pgwarden.roles=${escapeOption(roles.join(','))}`,
  );
  try {
    try {
      upstream = await connectUpstream(target, params, connectTimeoutMs, secure);
    } catch (e) {
      // A set login whose password was changed behind pgwarden's back is taken back (issue 17).
      if (!(setLogin && e instanceof UpstreamError && e.fields.code === '28P01')) throw e;
      log.warn({ event: 'set-login-refused', login: setLogin.user }, 'set login refused its password');
      try {
        setLogin = await managed.loginRejected(database, setLogin, roles);
      } catch (m) {
        if (m instanceof ManagedRolesError) throw fatal(m.sqlstate, m.message);
        throw m;
      }
      target = { ...target, user: setLogin.user, password: setLogin.password };
      upstream = await connectUpstream(target, params, connectTimeoutMs, secure);
    }
  } catch (e) {
    if (e instanceof UpstreamError) {
      // The upstream login is the proxy's, not the client's: its failures (a wrong server-held
      // password, a missing role) are the operator's to read in the log; the client learns
      // neither the role nor the reason. Capacity and availability errors pass as they are.
      const passes = PASSING_LOGIN_FAILURES.includes(e.fields.code);
      log.error(
        {
          event: 'upstream-login-failed',
          code: e.fields.code,
          message: e.fields.message,
          login: target.user,
          ...(e.logDetail ? { err: e.logDetail, upstream: `${target.host}:${target.port}` } : {}),
        },
        'upstream login failed',
      );
      throw new ClientError(
        passes
          ? { ...e.fields, severity: 'FATAL', localizedSeverity: undefined }
          : {
              severity: 'FATAL',
              code: '08006',
              message: 'pgwarden could not open a session on the upstream database; see the proxy log',
            },
      );
    }
    throw e;
  }
  return { upstream, target, setLogin };
}
