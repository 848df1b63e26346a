// `pgwarden replay --config proposed.yaml --audit audit.jsonl`: which verdicts of a recorded audit log a proposed policy changes.
import fs from 'node:fs';
import type { Catalog } from '../catalog/types.js';
import { loadParser } from '../sql/analyze.js';
import { majorOfServerVersion } from '../sql/parser.js';
import { ConfigError, loadConfig } from './config-load.js';
import type { Config } from './config-schema.js';
import { renderReplay, replayAudit } from './replay.js';

/** What the CLI prints and the code it exits with: 0 nothing changes, 1 some verdict changes, 2 usage or config error. */
export interface ReplayOutcome {
  readonly exitCode: 0 | 1 | 2;
  readonly stdout: string;
  readonly stderr: string;
}

/** The audit lines of a JSON-lines file (pino lines tagged `audit: true`); other lines are skipped. */
export function parseAuditJsonl(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const l = JSON.parse(line) as Record<string, unknown>;
      if (l.audit === true) out.push(l);
    } catch {
      // not a JSON line: a log line of another kind
    }
  }
  return out;
}

/**
 * Runs `pgwarden replay` (issue 19): loads the proposed config (and `--current`, when given; else each
 * line's recorded verdict is the baseline), reads the audit file, reads each database's catalog with
 * the proposed config's upstream URL, and reports every verdict that changes (text, or JSON). Exit 0
 * when none changes, 1 when some does, 2 for a usage or config error or an unreadable upstream.
 */
export async function runReplay(
  opts: { config: string; audit: string; current?: string; json?: boolean },
  deps: { loadCatalog(database: string, url: string): Promise<Catalog> },
): Promise<ReplayOutcome> {
  const fail = (m: string): ReplayOutcome => ({ exitCode: 2, stdout: '', stderr: `pgwarden replay: ${m}\n` });
  let proposed: Config;
  let current: Config | undefined;
  try {
    proposed = loadConfig(opts.config).config;
    if (opts.current !== undefined) current = loadConfig(opts.current).config;
  } catch (e) {
    if (e instanceof ConfigError) return { exitCode: 2, stdout: '', stderr: `${e.message}\n` };
    throw e;
  }
  let text: string;
  try {
    text = fs.readFileSync(opts.audit, 'utf8');
  } catch (e) {
    return fail(`cannot read ${opts.audit}: ${(e as Error).message}`);
  }
  const catalogs = new Map<string, Promise<Catalog>>();
  const catalog = (database: string) => {
    let c = catalogs.get(database);
    if (!c) {
      const url = proposed.databases[database]?.url as string;
      c = deps.loadCatalog(database, url).then(async (cat) => {
        await loadParser(majorOfServerVersion(cat.serverVersionNum));
        return cat;
      });
      catalogs.set(database, c);
    }
    return c;
  };
  let report: Awaited<ReturnType<typeof replayAudit>>;
  try {
    report = await replayAudit(parseAuditJsonl(text), { proposed, ...(current ? { current } : {}), catalog });
  } catch (e) {
    return fail(`cannot read a catalog upstream: ${(e as Error).message}`);
  }
  return {
    exitCode: report.changes.length > 0 ? 1 : 0,
    stdout: opts.json ? `${JSON.stringify(report, null, 2)}\n` : renderReplay(report),
    stderr: '',
  };
}
