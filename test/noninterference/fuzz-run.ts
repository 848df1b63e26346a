// A seeded generator run through the harness: counts, the one-third-allowed floor, and a shrunk statement per new leak.
import fc from 'fast-check';
import { statementArb } from './generator.js';
import { type Harness, type Outcome, report, type Stmt, summarize, type User } from './harness.js';
import { knownLeakFor, loadKnownLeaks } from './known-leaks.js';

export interface FuzzResult {
  readonly seed: number;
  readonly statements: number;
  readonly outcomes: Outcome[];
  /** Leaks not in known-leaks.yaml, each with its shrunk statement. */
  readonly newLeaks: { outcome: Outcome; shrunk: string; path: string }[];
  /** allowed + masked runs (statement × user) over all runs. */
  readonly allowedShare: number;
  readonly text: string;
}

/** Runs `count` generated statements from `seed` as alice and bob; shrinks the first few new leaks. */
export async function fuzz(harness: Harness, seed: number, count: number, offset = 0): Promise<FuzzResult> {
  const values = fc.sample(statementArb, { seed, numRuns: offset + count }).slice(offset);
  const stmts: Stmt[] = values.map((v, i) => ({
    id: `generated seed=${seed} path=${offset + i}`,
    sql: v.sql,
    mode: v.mode,
  }));
  const { outcomes, skipped } = await harness.run(stmts, { workers: 3 });
  const known = loadKnownLeaks();
  const fresh = outcomes.filter((o) => o.kind === 'leak' && !knownLeakFor(o, known));
  const newLeaks: FuzzResult['newLeaks'] = [];
  for (const o of fresh.slice(0, 3)) {
    const path = /path=(\d+)/.exec(o.stmt.id)?.[1] ?? '0';
    const user: User = o.user;
    const r = await fc.check(
      fc.asyncProperty(statementArb, async (g) => {
        const x = await harness.single({ id: 'shrink', sql: g.sql, mode: g.mode }, user);
        return x.kind !== 'leak';
      }),
      { seed, path, endOnFailure: false, numRuns: 1 },
    );
    const shrunk = r.counterexample?.[0];
    newLeaks.push({
      outcome: o,
      shrunk: shrunk ? `${shrunk.sql} (${shrunk.mode}, ${user})` : `(did not reproduce alone) ${o.stmt.sql}`,
      path: r.counterexamplePath ?? path,
    });
  }
  const t = summarize(outcomes);
  const allowedShare = (t.allowed + t.masked) / Math.max(outcomes.length, 1);
  const lines = [
    report(`noninterference generator (seed ${seed}, ${stmts.length} statements)`, outcomes, skipped),
    `  allowed share (allowed + masked): ${(allowedShare * 100).toFixed(1)}%`,
  ];
  for (const l of newLeaks) {
    lines.push(
      `  NEW LEAK seed=${seed} path=${l.path}: ${l.shrunk}\n    ${l.outcome.diff?.replace(/\n/g, '\n    ')}`,
    );
  }
  return { seed, statements: stmts.length, outcomes, newLeaks, allowedShare, text: lines.join('\n') };
}
