// `pgwarden replay`: the catalog reader wired to src/policy/replay-command.ts, its outcome printed.
import { finish } from './command-outcome.js';

/** The options of `pgwarden replay`. */
export interface ReplayCommandOptions {
  /** The proposed pgwarden.yaml. */
  config: string;
  /** The audit log (JSON lines). */
  audit: string;
  /** A config whose decisions are the baseline instead of the recorded verdicts. */
  current?: string;
  json?: boolean;
}

/**
 * The action of `pgwarden replay`: runs runReplay (src/policy/replay-command.ts) with a catalog
 * read by a CatalogSource (src/proxy/catalog-source.ts, closed afterwards so the command exits), prints the changed verdicts and sets the
 * exit code (0 none changes, 1 some does, 2 usage or config error).
 */
export async function replayAction(opts: ReplayCommandOptions): Promise<void> {
  const { runReplay } = await import('../policy/replay-command.js');
  const { CatalogSource } = await import('../proxy/catalog-source.js');
  const catalogs = new CatalogSource(60_000);
  try {
    finish(await runReplay(opts, { loadCatalog: (database, url) => catalogs.get(database, url) }));
  } finally {
    // The catalog connection is long-lived: close it so the command exits (it hung after printing).
    await catalogs.close();
  }
}
