// The listener: accepts clients, enforces the connection limit, reloads the config, shuts down gracefully.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { pgClientConfig } from '../catalog/upstream-tls.js';
import { connectionAccepted, policyInForce, watchCaches, watchConnections } from '../ops/metrics.js';
import type { LoadedConfig } from '../policy/config-load.js';
import { splitHostPort } from '../policy/config-schema.js';
import { DecisionCache } from '../policy/decision-cache.js';
import { configEpoch } from '../policy/policy-document.js';
import { staleRefusal } from '../policy/policy-lag.js';
import { RewriteCache } from '../rewrite/rewrite-cache.js';
import { ManagedRoles } from '../roles/managed-roles.js';
import { createAnalysisCache } from '../sql/analyze.js';
import type { ErrorFields } from '../wire/error-fields.js';
import { AuditLog } from './audit.js';
import { CancelRegistry } from './cancel-registry.js';
import { type CancelOutcome, routeCancel } from './cancel-routing.js';
import { CatalogSource } from './catalog-source.js';
import { ClientError } from './client-error.js';
import { lingeringRefusals } from './connection-refusal.js';
import type { ConsoleHandler, SessionCounters } from './console-port.js';
import { defaultMemoryBudget, MemoryBudget } from './memory-budget.js';
import type { ProxyOptions, ProxyServer } from './proxy-port.js';
import { ClientSession } from './session.js';
import { CATALOG_REFRESH_MIN_MS } from './session-catalog.js';
import { addCounters } from './session-totals.js';
import { authSecretFor, VerifierCache } from './verifier-cache.js';

/** How often open sessions are checked for an API key that expired meanwhile (ms). */
const EXPIRY_CHECK_MS = 30_000;

/** PostgreSQL's answer over max_connections (postmaster.c). */
const TOO_MANY: ErrorFields = {
  severity: 'FATAL',
  code: '53300',
  message: 'sorry, too many clients already',
};

function loadTls(loaded: LoadedConfig): tls.SecureContext | undefined {
  const t = loaded.config.tls;
  if (!t) return undefined;
  const dir = path.dirname(loaded.file);
  return tls.createSecureContext({
    cert: fs.readFileSync(path.resolve(dir, t.cert)),
    key: fs.readFileSync(path.resolve(dir, t.key)),
    minVersion: 'TLSv1.2',
  });
}

/**
 * Starts listening on the config's `listen` address. Resolves once bound; rejects when the
 * address cannot be bound (EADDRINUSE, EACCES) or the TLS files cannot be read.
 * Limits (issue 16 item 5): over `limits.max_client_connections` logged-in sessions, a new client
 * gets FATAL 53300 too_many_connections after its StartupMessage (a CancelRequest is still
 * served); over `max_pending_connections` connections still logging in, or
 * `max_pending_per_address` from one address, FATAL 53300 is written at once; a login not done
 * within `authentication_timeout_ms` is closed. Refused clients always get an ErrorResponse.
 */
export async function startProxy(
  initial: LoadedConfig,
  logger: Logger,
  opts: ProxyOptions = {},
): Promise<ProxyServer> {
  let current = initial;
  let secure = loadTls(initial);
  const sessions = new Set<ClientSession>();
  const cancels = new CancelRegistry(opts.cancelOwner);
  const cancelRoutes = opts.cancelRoutes ?? {};
  const cancel = async (processId: number, secretKey: number): Promise<CancelOutcome> =>
    routeCancel(cancels, cancelRoutes, processId, secretKey);
  const policy = opts.policy;
  const refuseNow = lingeringRefusals();
  const policyRefusal = policy
    ? () => (policy.isCurrent() ? undefined : staleRefusal(policy.currency()))
    : undefined;
  const verifiers = new VerifierCache(authSecretFor(initial.config, initial.file));
  // Under `roles: managed`, every catalog read is followed by a grant sync (issue 17).
  const managed: ManagedRoles = new ManagedRoles({
    logger,
    connection: opts.connection ?? initial.config.mode,
    catalog: (database) => catalogs.get(database, current.config.databases[database]?.url ?? ''),
  });
  const catalogs = new CatalogSource(
    initial.config.catalog.ttl_seconds * 1000,
    (database, catalog) => managed.sync(database, catalog),
    logger,
  );
  await managed.start(initial.config);
  // Both bounds are read at start (issue 16 item 2): a reload does not resize them.
  const analyses = createAnalysisCache({ maxAnalysisBytes: initial.config.limits.max_analysis_bytes });
  const decisions = new DecisionCache();
  const rewrites = new RewriteCache();
  const memory = new MemoryBudget(
    initial.config.limits.memory_budget_bytes ?? defaultMemoryBudget(),
    undefined,
    initial.config.limits.memory_wait_ms,
  );
  const audit = new AuditLog(opts.auditLogger ?? logger, () => configEpoch(current.config));
  policyInForce(configEpoch(initial.config), false);
  let nextId = 1;
  let closing = false;
  /** Connections that have not logged in yet (issue 16 item 5), in all and per client address. */
  const pending = new Set<ClientSession>();
  const pendingByAddress = new Map<string, number>();
  /** SHOW STATS: the counters of closed sessions, per database. */
  const closedTotals = new Map<string, SessionCounters>();
  let proxy: ProxyServer | undefined;
  const consoleHandler: ConsoleHandler | undefined = opts.console?.({
    config: () => current,
    epoch: () => configEpoch(current.config),
    clients: () => [...sessions].map((s) => s.info()),
    totals: () => {
      const all = new Map(closedTotals);
      for (const s of sessions) {
        const i = s.info();
        addCounters(all, i.database, i.counters);
      }
      return all;
    },
    kill: (id) => {
      const s = [...sessions].find((x) => x.id === id);
      if (!s) return false;
      s.kill(current.config.limits.shutdown_cancel_wait_ms);
      return true;
    },
    reload: opts.reloadConfig,
    shutdown: () => (opts.shutdown ? opts.shutdown() : void proxy?.close()),
    audit: (fields) => (opts.auditLogger ?? logger).info({ audit: true, admin: true, ...fields }, 'admin'),
  });

  const server = net.createServer({ noDelay: true }, (socket) => {
    const id = nextId++;
    connectionAccepted();
    const limits = current.config.limits;
    const address = socket.remoteAddress ?? '';
    const fromAddress = pendingByAddress.get(address) ?? 0;
    // Handshakes have their own limits, so idle or slow logins never lock out the sessions.
    if (pending.size >= limits.max_pending_connections || fromAddress >= limits.max_pending_per_address) {
      const perAddress = pending.size < limits.max_pending_connections;
      logger.warn(
        { event: 'refused', reason: '53300', pending: pending.size, address },
        'connection refused',
      );
      refuseNow(socket, {
        severity: 'FATAL',
        code: '53300',
        message: perAddress
          ? 'sorry, too many connections from this address are logging in at once'
          : 'sorry, too many connections are logging in at once',
      });
      return;
    }
    // Over the session limit (or shutting down), the client still gets its FATAL after its
    // StartupMessage, as from PostgreSQL, and a CancelRequest is still served.
    let refusal: ErrorFields | undefined;
    if (closing) refusal = { severity: 'FATAL', code: '57P03', message: 'the proxy is shutting down' };
    else if (sessions.size >= limits.max_client_connections) refusal = TOO_MANY;
    if (refusal) logger.warn({ event: 'refused', reason: refusal.code }, 'connection refused');
    pendingByAddress.set(address, fromAddress + 1);
    let counted = true;
    const unpend = (s: ClientSession) => {
      if (!counted) return;
      counted = false;
      pending.delete(s);
      const n = (pendingByAddress.get(address) ?? 1) - 1;
      if (n <= 0) pendingByAddress.delete(address);
      else pendingByAddress.set(address, n);
    };
    const session = new ClientSession(socket, id, {
      config: () => current,
      logger,
      cancels,
      memory,
      cancel,
      ...(policyRefusal ? { policyRefusal } : {}),
      verifiers,
      tls: secure,
      catalogs,
      analyses,
      decisions,
      rewrites,
      ...(opts.walls ? { walls: opts.walls } : {}),
      audit,
      managed,
      connection: opts.connection ?? current.config.mode,
      ...(refusal ? { refusal } : {}),
      admit: (s) => {
        unpend(s);
        if (closing) return { severity: 'FATAL', code: '57P03', message: 'the proxy is shutting down' };
        if (sessions.size >= current.config.limits.max_client_connections) return TOO_MANY;
        sessions.add(s);
        return undefined;
      },
      onClose: (s) => {
        unpend(s);
        if (sessions.delete(s)) {
          const i = s.info();
          if (i.database !== '') addCounters(closedTotals, i.database, i.counters);
        }
      },
      ...(consoleHandler ? { console: consoleHandler } : {}),
    });
    pending.add(session);
    void session.run();
  });
  server.maxConnections = 100_000;

  const [host, port] = splitHostPort(opts.listen ?? initial.config.listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (e) => logger.error({ err: e.message }, 'listener error'));
  // API keys expire while their sessions are open: check every session against the clock.
  const expiry = setInterval(() => {
    for (const s of sessions) s.recheck(current.config);
  }, EXPIRY_CHECK_MS);
  expiry.unref();
  const unwatch = [
    watchConnections(() => ({ active: sessions.size, pending: pending.size })),
    watchCaches(() => ({ analysis: analyses.stats(), decision: decisions.stats() })),
  ];
  const addr = server.address() as net.AddressInfo;
  logger.info({ event: 'listening', host: addr.address, port: addr.port }, 'pgwarden listening');

  proxy = {
    address: { host: addr.address, port: addr.port },
    sessionCount: () => sessions.size,
    pendingCount: () => pending.size,
    stats: () => ({
      analysis: analyses.stats(),
      decision: decisions.stats(),
      memory: { limit: memory.limit, inUse: memory.inUse, retained: memory.retained },
    }),
    probe: (database, timeoutMs) => {
      const db = current.config.databases[database];
      if (!db)
        return Promise.resolve({ catalog: false, upstream: false, error: `no database "${database}"` });
      return catalogs.probe(database, pgClientConfig(db, path.dirname(current.file)), timeoutMs);
    },
    managed,
    catalog(database, catalogOpts = {}) {
      const db = Object.hasOwn(current.config.databases, database)
        ? current.config.databases[database]
        : undefined;
      if (!db) return Promise.reject(new Error(`no database "${database}" in the config`));
      if (catalogOpts.refresh) catalogs.refresh(database, CATALOG_REFRESH_MIN_MS);
      return catalogs.get(database, pgClientConfig(db, path.dirname(current.file)));
    },
    epoch: () => configEpoch(current.config),
    config: () => current,
    readiness() {
      const reasons: string[] = [];
      if (closing) reasons.push('shutting down');
      const c = policy?.currency();
      if (c && !c.current)
        reasons.push(
          `policy not confirmed current for ${c.lagMs} ms (bound ${c.boundMs} ms)${c.reason ? `: ${c.reason}` : ''}`,
        );
      return { ready: reasons.length === 0, closing, reasons, ...(c ? { policy: c } : {}) };
    },
    async cancelHere(processId, secretKey) {
      const target = cancels.find(processId, secretKey);
      await target?.cancel();
      return target !== undefined;
    },
    reload(next) {
      secure = loadTls(next);
      current = next;
      policyInForce(configEpoch(next.config), true);
      logger.info(
        { event: 'reload', file: next.file, epoch: configEpoch(next.config) },
        'configuration reloaded',
      );
      void managed.reload(next.config);
      for (const s of sessions) s.recheck(next.config);
    },
    async close(graceMs = current.config.limits.shutdown_grace_ms) {
      closing = true;
      clearInterval(expiry);
      for (const u of unwatch) u();
      managed.close();
      const stopped = new Promise<void>((r) => server.close(() => r()));
      for (const s of sessions) s.shutdown();
      for (const s of pending)
        s.terminate(
          new ClientError({
            severity: 'FATAL',
            code: '57P01',
            message: 'terminating connection due to administrator command',
          }),
        );
      const deadline = Date.now() + graceMs;
      while (sessions.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      // Statements still running are canceled (their upstream backend terminated if they do not
      // answer), open transactions rolled back, and each client told what became of them.
      const cancelWait = current.config.limits.shutdown_cancel_wait_ms;
      await Promise.all([...sessions].map((s) => s.endAfterGrace(cancelWait)));
      for (const s of sessions) s.terminate();
      for (const s of pending) s.terminate();
      await stopped;
      await catalogs.close();
      logger.info({ event: 'stopped' }, 'pgwarden stopped');
    },
  };
  return proxy;
}
