// The administration connection of one managed database: opened on first use, kept open, used by one caller at a time.
import pg from 'pg';

/**
 * One long-lived connection as a managed database's administration login (issue 15: no connect
 * per grant sync), opened on first use and again after it breaks. Uses run one after another. A
 * use that rejects is followed by a ROLLBACK, so the next one never starts inside its transaction;
 * a connection that cannot take the ROLLBACK is dropped (the next use opens another).
 */
export class AdminConnection {
  private conn: Promise<pg.Client> | undefined;
  private chain: Promise<unknown> = Promise.resolve();

  /** @param url the administration login's connection string (`admin_url`, else `url`). */
  constructor(private readonly url: string) {}

  /**
   * Runs `f` on the connection once the uses before it are done; resolves or rejects as `f` does
   * (or with the connection error, e.g. `pg`'s for a refused login).
   */
  use<T>(f: (c: pg.Client) => Promise<T>): Promise<T> {
    const run = this.chain
      .catch(() => {})
      .then(async () => {
        const c = await this.client();
        try {
          return await f(c);
        } catch (e) {
          await c.query('ROLLBACK').catch(() => this.close());
          throw e;
        }
      });
    this.chain = run.catch(() => {});
    return run;
  }

  /** Ends the connection (a use after this opens a new one). */
  close(): void {
    const conn = this.conn;
    this.conn = undefined;
    conn?.then((c) => c.end()).catch(() => {});
  }

  private client(): Promise<pg.Client> {
    if (this.conn) return this.conn;
    const c = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: 10_000,
      application_name: 'pgwarden admin',
    });
    const conn = c.connect().then(
      () => c,
      (e: unknown) => {
        if (this.conn === conn) this.conn = undefined;
        throw e;
      },
    );
    const lost = () => {
      if (this.conn === conn) this.conn = undefined;
    };
    c.on('error', lost);
    c.on('end', lost);
    this.conn = conn;
    return conn;
  }
}
