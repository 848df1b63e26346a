// The audit's statement text: literals are replaced in every statement of a string, whatever their spelling.
// Corpus: corpus/attacks/audit-text.yaml.
import { describe, expect, test } from 'vitest';
import { inRollback, outcome } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({ users: ['alice', 'bob'], log: true });
const { users } = fx;

/** The audit lines written so far whose normalized SQL is set. */
function auditSql(): string[] {
  return fx.logLines.filter((l) => l.audit === true && typeof l.sql === 'string').map((l) => l.sql as string);
}

describe('the audit prints no literals', () => {
  // audit.ts: "the normalized text (literals replaced, never the raw values)".
  test("a typed literal (text'…', interval'…') is logged raw: the quote after an identifier is not a string start", async () => {
    const r = await inRollback(
      users.bob,
      "update users set email = text'new.secret@example.org' where id = 1",
    );
    expect(r.code).toBe('ok');
    const lines = auditSql().filter((s) => s.includes('update users'));
    expect(lines.length).toBeGreaterThan(0);
    for (const s of lines) expect(s).not.toContain('new.secret');
  });

  test('alice: a multi-statement string with astral characters is audited statement by statement, literals replaced', async () => {
    // Statement offsets count code points; slicing them as UTF-16 offsets (String.slice) shifted the
    // second statement's window by nine units, out of its quotes (fixed by 0f3a2f6: sliceCodePoints).
    const r = await outcome(
      users.alice,
      `select '${'😀'.repeat(9)}' as e; select 'Ada Tervo' as n, 'q' as m`,
    );
    expect(r.code).toBe('ok');
    for (const s of auditSql()) expect(s).not.toContain('Ada Tervo');
  });
});
