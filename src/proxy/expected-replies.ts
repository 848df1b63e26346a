// The queue of replies the upstream owes a relay, and the prepared-statement and portal entries they restore.
import type { ResultRows } from '../catalog/read-catalog.js';
import type { Config } from '../policy/config-schema.js';
import type { StatementPlan } from './statement-plan.js';

/** A bound portal: the plan of its statement and the statement's text (for the audit). */
export interface PortalEntry {
  readonly plan: StatementPlan | null;
  readonly sql: string;
  /** The prepared statement it was bound to (absent: a SQL cursor): an Execute after a policy change decides it again. */
  readonly from?: PreparedEntry;
}

/** A protocol-level prepared statement: its text and the plan decided for it, with what it was decided under. */
export interface PreparedEntry {
  readonly sql: string;
  readonly plan: StatementPlan | null;
  readonly pathVersion: number;
  readonly catalogVersion: number;
  /** The policy (Config value) it was decided under: a reload decides it again at Bind. */
  readonly policy: Config;
  /** The text prepared upstream (the rewritten one under mask at read). */
  readonly sent: string;
  /** The parameter type OIDs of its Parse (to prepare the unnamed statement again upstream). */
  readonly paramTypes?: readonly number[];
}

/**
 * Puts one entry of a map (prepared statements, portals) back as it was when this was made: for a
 * message the upstream refused or skipped, whose effect on the name therefore never happened.
 */
export class MapUndo {
  private readonly had: boolean;
  private readonly old: unknown;
  constructor(
    private readonly map: Map<string, unknown>,
    private readonly key: string,
  ) {
    this.had = map.has(key);
    this.old = map.get(key);
  }

  /** Restores the entry (or its absence). */
  run(): void {
    if (this.had) this.map.set(this.key, this.old);
    else this.map.delete(this.key);
  }
}

/** Replies the upstream owes us, in order (DESIGN.md "a queue of expected replies"). */
export type Expect =
  | {
      readonly t: 'query';
      readonly plans: readonly StatementPlan[];
      index: number;
      readonly sql: string;
      readonly started: number;
      /** When the Query went upstream (for the upstream duration); absent for a staged string's stages. */
      readonly sent?: number;
      /**
       * A stage of a string pgwarden runs in its own transaction: its ReadyForQuery is handed
       * here instead of to the client, unless this returns true.
       */
      readonly held?: (status: 'I' | 'T' | 'E') => boolean;
      /**
       * pgwarden's own COMMIT or ROLLBACK goes first in the same Query (relay-string-control.ts):
       * its CommandComplete is dropped, and this is cleared.
       */
      own?: boolean;
      /** The BEGIN this Query sends is a string's own inside pgwarden's block: its 25001 warning is dropped. */
      readonly quietBegin?: boolean;
    }
  /** pgwarden's closing statement of a staged string: only its error and ReadyForQuery reach the client. */
  | { readonly t: 'finish' }
  | { readonly t: 'parse'; readonly entry: PreparedEntry; readonly undo: MapUndo }
  /** pgwarden's own Parse of the unnamed statement again (after its own Simple Query dropped it upstream): ParseComplete consumed. */
  | { readonly t: 'reparse' }
  | { readonly t: 'bind'; readonly undo: MapUndo }
  | { readonly t: 'describe'; readonly plan: StatementPlan | null }
  | {
      readonly t: 'execute';
      readonly plan: StatementPlan | null;
      readonly sql: string;
      readonly started: number;
    }
  | { readonly t: 'close'; readonly undo: MapUndo }
  /** A Sync; `error` (ours, for a Sync sent with a payload) goes out before its ReadyForQuery. */
  | { readonly t: 'sync'; readonly error?: Buffer }
  /** pgwarden's own catalog read on this session: every reply is consumed here, none reaches the client. */
  | {
      readonly t: 'internal';
      readonly results: ResultRows[];
      fields: ((v: string) => unknown)[];
      names: string[];
      rows: Record<string, unknown>[];
      failed: boolean;
      /** The SQLSTATE of the error that failed it. */
      sqlstate?: string;
      /** Its result sets, or null when it failed (then `completed` statements had run). */
      readonly done: (r: ResultRows[] | null, completed: number, sqlstate?: string) => void;
    }
  /** A message we sent in place of a refused one, so the upstream's transaction fails as Postgres's would. */
  | { readonly t: 'probe'; readonly error: Buffer; readonly untilReady: boolean };
