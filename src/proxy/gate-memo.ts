// A session's last gate results by text: the same statement again, under the same state, is not analyzed or decided again.
import type { Catalog } from '../catalog/types.js';
import type { Config } from '../policy/config-schema.js';
import { type WallSwitches, wallSwitches } from '../policy/wall-switches.js';
import { rewrittenFor } from '../rewrite/rewrite-cache.js';
import { lexicalKey } from '../sql/lexical-key.js';
import type { GateSession } from './gate-session.js';
import type { SessionPaths } from './search-path-tracker.js';
import type { GateResult } from './statement-plan.js';

type Allowed = GateResult & { ok: true };

/** What a memoized result was decided under: every input of the gate that can change in a session. */
interface Entry {
  readonly result: Allowed;
  readonly catalog: Catalog;
  readonly config: Config;
  readonly roles: readonly string[];
  /** The tracker's paths() value (a new value whenever one of the four paths changes). */
  readonly paths: SessionPaths;
  readonly walls: WallSwitches;
}

/** How many gate results the memos of this process served (bench/: the share of statements neither parsed nor looked up). */
export interface GateMemoStats {
  /** Served for the very text decided before. */
  readonly exactHits: number;
  /** Served for a text of the same lexical key (only literal values of the same length differ). */
  readonly lexicalHits: number;
}

let exactHits = 0;
let lexicalHits = 0;

/** The process's memo hit counters since it started (every session's {@link GateMemo} adds to them). */
export function gateMemoStats(): GateMemoStats {
  return { exactHits, lexicalHits };
}

/** Most texts a memo holds (each map); when full it starts over. */
const MAX_ENTRIES = 64;
/**
 * Longest text memoized (UTF-16 code units): the memo is for short hot statements; a longer one is
 * decided anew each time. Without it a session held its last 64 texts whatever their size (issue 16
 * item 2: 24 sessions each kept their 60 MB statement, 1.4 GB of heap outside the memory budget).
 */
export const MAX_MEMO_TEXT = 4096;
/** Most code units of text (keys and rewritten texts) one map holds; when over it starts over. */
const MAX_MEMO_UNITS = 64 * 1024;

/**
 * The gate's allowed results of one session, by text (issue 18: the hot path decides pgbench's
 * statement once, not once per execution). A result is served again only when everything the
 * gate read to make it is the same value: the catalog, the policy, the roles, the four search
 * paths, the test-only wall switches (database and connection kind are fixed per session).
 * Only results whose statements have no session effect (no SET, PREPARE, EXECUTE, FETCH, …: those
 * read or change the session's names) and change no catalog are kept; refusals never are.
 * A text with the same lexical key (sql/lexical-key.ts: only literal values of the same length
 * differ) shares the result when its analysis is one the analysis cache shares between such texts
 * (AnalysisCache.sharedByLiterals); a rewritten text then gets the first one's edits applied to it, exactly
 * as the rewrite cache does (rewrite-cache.ts `rewrittenFor`).
 */
export class GateMemo {
  private readonly exact = new Map<string, Entry>();
  private readonly lexical = new Map<string, Entry>();
  /** Code units of text held by each map (keys and rewritten texts). */
  private exactUnits = 0;
  private lexicalUnits = 0;

  /** The memoized result for `sql` now, or undefined (then the gate decides, and {@link keep}s it). */
  get(sql: string, session: GateSession, catalog: Catalog): Allowed | undefined {
    if (sql.length > MAX_MEMO_TEXT) return undefined;
    const hit = this.exact.get(sql);
    if (hit) {
      if (!current(hit, session, catalog)) return undefined;
      exactHits++;
      return hit.result;
    }
    if (this.lexical.size === 0) return undefined;
    const lex = lexicalKey(sql);
    const family = lex === null ? undefined : this.lexical.get(lex);
    if (!family || !current(family, session, catalog)) return undefined;
    const sent = family.result.sent;
    if (!sent) {
      lexicalHits++;
      return family.result;
    }
    const again = rewrittenFor(sent, sql);
    if (!again) return undefined;
    lexicalHits++;
    return { ...family.result, sent: again };
  }

  /**
   * Remembers an allowed result of the gate for `sql`, decided with `catalog`, when it may be
   * served again; `sharedByLiterals`: its analysis holds for every text of its lexical key.
   */
  keep(
    sql: string,
    session: GateSession,
    catalog: Catalog,
    result: Allowed,
    sharedByLiterals: boolean,
  ): void {
    if (sql.length > MAX_MEMO_TEXT) return;
    if (result.rest !== undefined || result.head !== undefined) return;
    if (result.plans.some((p) => p.effects.length > 0 || p.changesCatalog)) return;
    const entry: Entry = {
      result,
      catalog,
      config: session.config,
      roles: session.roles,
      paths: session.paths.paths(),
      walls: wallSwitches(),
    };
    const units = sql.length + (result.sent?.text.length ?? 0);
    if (this.exact.size >= MAX_ENTRIES || this.exactUnits + units > MAX_MEMO_UNITS) {
      this.exact.clear();
      this.exactUnits = 0;
    }
    this.exact.set(sql, entry);
    this.exactUnits += units;
    if (!sharedByLiterals) return;
    const lex = lexicalKey(sql);
    if (lex === null) return;
    if (this.lexical.size >= MAX_ENTRIES || this.lexicalUnits + units > MAX_MEMO_UNITS) {
      this.lexical.clear();
      this.lexicalUnits = 0;
    }
    this.lexical.set(lex, entry);
    this.lexicalUnits += units;
  }
}

function current(e: Entry, session: GateSession, catalog: Catalog): boolean {
  if (e.catalog !== catalog || e.config !== session.config || e.roles !== session.roles) return false;
  return e.walls === wallSwitches() && e.paths === session.paths.paths();
}
