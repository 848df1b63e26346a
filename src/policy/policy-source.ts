// Where a running instance gets its policy from the store: start (or the cache), LISTEN for changes, reconnect and catch up.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import type { LoadedConfig } from './config-load.js';
import { validatePolicy, withPolicy } from './policy-document.js';
import { type PolicyCurrency, PolicyLag } from './policy-lag.js';
import { POLICY_CHANNEL } from './policy-migrations.js';
import type { Policy } from './policy-schema.js';
import { PolicyStore, PolicyStoreUnavailableError } from './policy-store.js';
import type { StoredPolicy } from './policy-tables.js';

/** How long to wait between attempts to reach the store again after losing it (ms). */
const RETRY_MS = 500;
/** How often the LISTEN connection is pinged, so that a silently dead one is noticed (ms). */
const PING_MS = 2000;

/** What `/healthz` and the log say about the store (issue 19). */
export interface PolicySourceStatus {
  /** `listening`: changes arrive; `disconnected`: serving under the last epoch until the store is back. */
  readonly state: 'listening' | 'disconnected';
  readonly version: number;
  readonly epoch: string;
  /** Where the policy in force came from: the store, or the `policy_cache` file at start. */
  readonly from: 'store' | 'cache';
  readonly since: string;
  readonly lastError?: string;
}

/** The last good policy, as `policy_cache` keeps it (JSON, mode 0600: it holds SCRAM verifiers). */
interface CacheFile {
  readonly version: number;
  readonly epoch: string;
  readonly policy: unknown;
}

/** The store's policy merged into the instance's own config (its file: listener, databases, …). */
function merged(instance: LoadedConfig, policy: Policy): LoadedConfig {
  return { ...instance, config: withPolicy(instance.config, policy) };
}

/**
 * The policy of an instance whose config names `policy_store` (issue 19, "Every instance sees every
 * change"). {@link PolicySource.start} reads the store (or, when it cannot be reached and
 * `policy_cache` is set, the cached last good policy; otherwise it throws
 * {@link PolicyStoreUnavailableError}), then LISTENs on `pgwarden_policy`: each NOTIFY re-reads the
 * store and calls `onChange` with the merged config. A lost LISTEN connection is retried every
 * 0.5 s; until it is back the instance keeps its last epoch (`state: 'disconnected'`, logged), and on
 * reconnect it re-reads the store and catches up. Once a `fleet.heartbeat_ms` it also asks the
 * store for its newest version (a missed NOTIFY is caught up then) and keeps the time the policy in
 * force was last confirmed current: past `fleet.max_policy_lag_ms`, {@link currency} says it is not
 * (issue 21, "Fleet consistency": statements are refused, /readyz fails), logged once per streak.
 */
export class PolicySource {
  private listener: pg.Client | undefined;
  private ping: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private closed = false;
  private state: PolicySourceStatus;
  private readonly lag: PolicyLag;
  private poll: NodeJS.Timeout | undefined;
  private polling = false;
  private wasCurrent = true;

  private constructor(
    private instance: LoadedConfig,
    private storeHandle: PolicyStore | undefined,
    private current: { version: number; epoch: string; policy: Policy },
    from: 'store' | 'cache',
    private readonly logger: Logger,
    private readonly onChange: (loaded: LoadedConfig, stored: StoredPolicy) => void,
  ) {
    this.state = {
      state: 'disconnected',
      version: current.version,
      epoch: current.epoch,
      from,
      since: new Date().toISOString(),
    };
    this.lag = new PolicyLag(instance.config.fleet.max_policy_lag_ms);
    if (from === 'cache') this.lag.unconfirmed('started from policy_cache: the policy store was unreachable');
  }

  /** Opens the store (or the cache) for `instance` (whose config has `policy_store`) and starts listening. */
  static async start(
    instance: LoadedConfig,
    logger: Logger,
    onChange: (loaded: LoadedConfig, stored: StoredPolicy) => void,
  ): Promise<PolicySource> {
    const url = instance.config.policy_store;
    if (url === undefined) throw new Error('PolicySource needs policy_store');
    const cacheFile = cachePath(instance);
    let source: PolicySource;
    try {
      const store = await PolicyStore.open(url);
      const stored = await store.current();
      source = new PolicySource(instance, store, stored, 'store', logger, onChange);
      source.writeCache(stored);
    } catch (e) {
      const cached = cacheFile !== undefined ? readCache(cacheFile) : undefined;
      if (!cached) {
        if (e instanceof PolicyStoreUnavailableError && cacheFile !== undefined)
          throw new PolicyStoreUnavailableError(
            `${e.message}; and the policy_cache ${cacheFile} cannot be read`,
          );
        throw e;
      }
      logger.warn(
        { event: 'policy-store-unavailable', err: (e as Error).message, epoch: cached.epoch },
        'policy store unreachable at start: serving the cached policy until it is back',
      );
      source = new PolicySource(instance, undefined, cached, 'cache', logger, onChange);
    }
    await source.listen();
    source.startPolling();
    return source;
  }

  /** Whether the policy in force is within `fleet.max_policy_lag_ms` of the store now (cheap). */
  isCurrent(): boolean {
    return this.lag.isCurrent();
  }

  /** The fleet-consistency state of the policy in force (issue 21). */
  currency(): PolicyCurrency {
    return this.lag.status(this.current.epoch, this.current.version);
  }

  private startPolling(): void {
    const every = this.instance.config.fleet.heartbeat_ms;
    this.poll = setInterval(() => void this.checkCurrent(every), every);
    this.poll.unref();
  }

  /**
   * Asks the store for its newest version: the same epoch confirms the policy in force as of when
   * the question was sent; a newer one is read at once. One question at a time; one unanswered
   * after `timeoutMs` leaves the policy unconfirmed (a store that hangs is a store that lags).
   */
  private async checkCurrent(timeoutMs: number): Promise<void> {
    this.noteCurrency();
    const store = this.storeHandle;
    if (this.polling || this.closed) return;
    if (!store) {
      this.lag.unconfirmed('the policy store is unreachable');
      return;
    }
    this.polling = true;
    const sentAt = Date.now();
    const late = setTimeout(
      () => this.lag.unconfirmed(`the policy store has not answered for ${timeoutMs} ms`),
      timeoutMs,
    );
    try {
      const head = await store.head();
      if (head.epoch === null ? this.current.version === 0 : head.epoch === this.current.epoch)
        this.lag.confirm(sentAt);
      else {
        this.lag.unconfirmed(`the store holds version ${head.version}, not loaded yet`);
        await this.refresh();
      }
    } catch (e) {
      this.lag.unconfirmed(`cannot read the policy store: ${(e as Error).message}`);
    } finally {
      clearTimeout(late);
      this.polling = false;
      // A late answer is old news: ask again at once rather than count on it.
      if (Date.now() - sentAt > timeoutMs) void this.checkCurrent(timeoutMs);
      else this.noteCurrency();
    }
  }

  /** Logs the start and the end of a streak of not being current ("never without saying so"). */
  private noteCurrency(): void {
    const c = this.currency();
    if (c.current === this.wasCurrent) return;
    this.wasCurrent = c.current;
    if (!c.current)
      this.logger.error(
        {
          event: 'policy-stale',
          lag_ms: c.lagMs,
          bound_ms: c.boundMs,
          epoch: c.epoch,
          version: c.version,
          reason: c.reason,
        },
        'the policy in force is not confirmed current: statements are refused until it catches up',
      );
    else
      this.logger.info(
        { event: 'policy-current', epoch: c.epoch, version: c.version },
        'policy current again',
      );
  }

  /** The instance config with the policy in force. */
  get loaded(): LoadedConfig {
    return merged(this.instance, this.current.policy);
  }

  /** The store (undefined while it has not been reached since a start from the cache). */
  get store(): PolicyStore | undefined {
    return this.storeHandle;
  }

  /** The state for `/healthz`. */
  status(): PolicySourceStatus {
    return this.state;
  }

  /** A new instance config (SIGHUP); the policy stays the store's. Output: the merged config. */
  setInstance(next: LoadedConfig): LoadedConfig {
    this.instance = next;
    return this.loaded;
  }

  /**
   * Re-reads the store now and applies a new epoch (what a NOTIFY triggers: the latest version, one
   * query; `full` reads every table, as at start and on reconnect); errors are logged.
   */
  async refresh(full = false): Promise<void> {
    const store = this.storeHandle;
    if (!store) return;
    const sentAt = Date.now();
    try {
      const stored = full ? await store.current() : await store.latest();
      this.state = { ...this.state, version: stored.version, epoch: stored.epoch, from: 'store' };
      this.lag.confirm(sentAt);
      this.noteCurrency();
      if (stored.epoch === this.current.epoch) return;
      this.current = stored;
      this.writeCache(stored);
      this.logger.info(
        { event: 'policy-reload', version: stored.version, epoch: stored.epoch },
        'policy changed',
      );
      this.onChange(this.loaded, stored);
    } catch (e) {
      this.lag.unconfirmed(`cannot read the policy store: ${(e as Error).message}`);
      this.logger.error(
        { event: 'policy-reload-failed', err: (e as Error).message },
        'cannot read the policy store',
      );
    }
  }

  /** Stops listening and closes the store. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.poll);
    clearInterval(this.ping);
    clearTimeout(this.retry);
    await this.listener?.end().catch(() => {});
    await this.storeHandle?.close().catch(() => {});
  }

  private async listen(): Promise<void> {
    const url = this.instance.config.policy_store as string;
    try {
      if (!this.storeHandle) this.storeHandle = await PolicyStore.open(url);
      const client = new pg.Client({
        connectionString: url,
        keepAlive: true,
        application_name: 'pgwarden policy listener',
      });
      client.on('error', (e) => this.lost(client, e));
      client.on('end', () => this.lost(client, new Error('connection ended')));
      client.on('notification', (n) => {
        if (n.channel === POLICY_CHANNEL) void this.refresh();
      });
      await client.connect();
      await client.query(`LISTEN ${POLICY_CHANNEL}`);
      if (this.closed) {
        await client.end();
        return;
      }
      this.listener = client;
      this.ping = setInterval(() => {
        client.query('SELECT 1').catch((e: Error) => this.lost(client, e));
      }, PING_MS);
      this.ping.unref();
      const was = this.state.state;
      this.state = { ...this.state, state: 'listening', since: new Date().toISOString() };
      delete (this.state as { lastError?: string }).lastError;
      if (was === 'disconnected' && this.state.from === 'cache')
        this.logger.info({ event: 'policy-store-back' }, 'policy store reached; reading it');
      await this.refresh(true);
    } catch (e) {
      this.disconnected((e as Error).message);
    }
  }

  private lost(client: pg.Client, e: Error): void {
    if (this.closed || this.listener !== client) return;
    this.listener = undefined;
    clearInterval(this.ping);
    client.end().catch(() => {});
    this.disconnected(e.message);
  }

  private disconnected(message: string): void {
    if (this.closed) return;
    if (this.state.state !== 'disconnected' || this.state.lastError === undefined)
      this.logger.warn(
        { event: 'policy-store-lost', err: message, epoch: this.current.epoch },
        'lost the policy store: serving under the last epoch until it is back',
      );
    this.state = {
      ...this.state,
      state: 'disconnected',
      since: new Date().toISOString(),
      lastError: message,
    };
    this.retry = setTimeout(() => void this.listen(), RETRY_MS);
    this.retry.unref();
  }

  private writeCache(stored: StoredPolicy): void {
    const file = cachePath(this.instance);
    if (file === undefined) return;
    try {
      const body: CacheFile = { version: stored.version, epoch: stored.epoch, policy: stored.policy };
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify(body), { mode: 0o600 });
      fs.renameSync(tmp, file);
    } catch (e) {
      this.logger.warn(
        { event: 'policy-cache-failed', err: (e as Error).message },
        'cannot write policy_cache',
      );
    }
  }
}

function cachePath(instance: LoadedConfig): string | undefined {
  const c = instance.config.policy_cache;
  return c === undefined ? undefined : path.resolve(path.dirname(instance.file), c);
}

function readCache(file: string): { version: number; epoch: string; policy: Policy } | undefined {
  try {
    const c = JSON.parse(fs.readFileSync(file, 'utf8')) as CacheFile;
    return { version: c.version, epoch: c.epoch, policy: validatePolicy(c.policy) };
  } catch {
    return undefined;
  }
}
