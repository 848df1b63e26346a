// `pgwarden check`: the catalog reader wired to src/policy/check-run.ts, its outcome printed.
import { colour, finish } from './command-outcome.js';

/** The options of `pgwarden check` (the SQL string is its argument). */
export interface CheckCommandOptions {
  config: string;
  user: string;
  role?: string;
  database?: string;
  json?: boolean;
}

/**
 * The action of `pgwarden check <sql>`: runs runCheck (src/policy/check-run.ts) with a catalog
 * read by a CatalogSource (src/proxy/catalog-source.ts, closed afterwards so the command exits),
 * prints its report and sets the exit code (0 allowed, 1 refused, 2 usage or config error).
 */
export async function checkAction(sql: string, opts: CheckCommandOptions): Promise<void> {
  const { runCheck } = await import('../policy/check-run.js');
  const { CatalogSource } = await import('../proxy/catalog-source.js');
  const catalogs = new CatalogSource(60_000);
  try {
    finish(
      await runCheck(
        { ...opts, sql, colour: colour() },
        { loadCatalog: (database, url) => catalogs.get(database, url) },
      ),
    );
  } finally {
    // The catalog connection is long-lived: close it so the command exits.
    await catalogs.close();
  }
}
