// The readiness probe of a database's catalog (/readyz): its catalog connection answers and its catalog has been read.
import { type CatalogConnection, CatalogUnavailable } from './catalog-connection.js';

/** What a readiness probe reports (admin routes-ops.ts /readyz). */
export interface ProbeResult {
  catalog: boolean;
  upstream: boolean;
  error?: string;
}

/** What a probe needs of the catalog source for one database. */
export interface ProbeTarget {
  readonly conn: CatalogConnection;
  /** Whether a catalog has been read. */
  loaded(): boolean;
  /** Reads the catalog (when none is loaded yet). */
  read(): Promise<unknown>;
}

/**
 * Readiness probes, one in flight per database, shared by every caller meanwhile: /readyz is
 * served without a caller, and a probe each would queue a query each on the catalog connection
 * every session's catalog reads wait behind (1000 at once made probes time out).
 */
export class CatalogProbes {
  private readonly running = new Map<string, Promise<ProbeResult>>();

  /**
   * Whether `database`'s catalog has been read and its catalog connection answers `SELECT 1`
   * within `timeoutMs` (the connection is opened when needed, the catalog read when none is
   * loaded). Never rejects: `error` says what failed, without the upstream's address.
   */
  probe(database: string, target: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
    const running = this.running.get(database);
    if (running) return running;
    const p = probeOnce(database, target, timeoutMs);
    this.running.set(database, p);
    const clear = () => {
      if (this.running.get(database) === p) this.running.delete(database);
    };
    p.then(clear, clear);
    return p;
  }
}

async function probeOnce(database: string, target: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
  const within = <T>(p: Promise<T>): Promise<T> =>
    Promise.race([
      p,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref(),
      ),
    ]);
  let upstream = false;
  let error: string | undefined;
  try {
    const client = await within(target.conn.client());
    await within(client.query('SELECT 1'));
    upstream = true;
  } catch (e) {
    error =
      e instanceof CatalogUnavailable ? e.message : 'the upstream does not answer on the catalog connection';
  }
  if (!target.loaded() && upstream) await within(target.read()).catch(() => undefined);
  const catalog = target.loaded();
  if (!catalog && error === undefined) error = `the catalog of database "${database}" has not been read`;
  return { catalog, upstream, ...(error !== undefined ? { error } : {}) };
}
