// What a decision needs besides the analysis and the roles: the policy, the connection kind, the database, the catalog, test switches.
import type { Catalog } from '../catalog/types.js';
import type { Config } from './config-schema.js';
import type { ConnectionKind } from './decision-types.js';

/** What decide (decide.ts) needs besides the analysis and the roles. */
export interface DecideContext {
  /** The policy in force. */
  readonly config: Config;
  /** Who holds the credentials (seed 004, "Databases nobody has written a rule for"). */
  readonly connection: ConnectionKind;
  /** The client-facing database name (a key of `config.databases`), as rules scope it. */
  readonly database: string;
  /** The catalog the analysis was made with (unique constraints, generated columns, table columns). */
  readonly catalog: Catalog;
  /**
   * False only in tests that turn wall 1's SEE checks off (wall-switches.ts): step 4 is skipped, so
   * nothing is masked or refused for being hidden. Absent: on.
   */
  readonly seeChecks?: boolean;
  /** False only in tests that turn mask at read off (wall-switches.ts): the text is sent as written. */
  readonly rewrite?: boolean;
}
