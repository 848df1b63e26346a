// The leaks the harness has found and the product does not fix yet (corpus/noninterference/known-leaks.yaml), listed so CI stays meaningful.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import type { Outcome, User } from './harness.js';
import { NI_CORPUS } from './sources.js';

/** One known leak: the exact statement text and user, or a pattern for generated statements of one kind. */
export interface KnownLeak {
  readonly id: string;
  readonly user: User;
  /** Exact SQL text (corpus statements). */
  readonly sql?: string;
  /** A regular expression a generated statement of this kind matches. */
  readonly pattern?: string;
  /** Which hidden value it reveals and why. */
  readonly reason: string;
}

export function loadKnownLeaks(): KnownLeak[] {
  const file = path.join(NI_CORPUS, 'known-leaks.yaml');
  if (!fs.existsSync(file)) return [];
  return ((YAML.parse(fs.readFileSync(file, 'utf8')) as { leaks?: KnownLeak[] } | null)?.leaks ??
    []) as KnownLeak[];
}

/** The known leak an outcome is, if any. */
export function knownLeakFor(o: Outcome, known: readonly KnownLeak[]): KnownLeak | undefined {
  return known.find(
    (k) =>
      k.user === o.user &&
      ((k.sql !== undefined && k.sql.trim() === o.stmt.sql.trim()) ||
        (k.pattern !== undefined && new RegExp(k.pattern, 'i').test(o.stmt.sql))),
  );
}
