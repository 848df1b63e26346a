// The extended protocol, portals and cursors: protocol-level and SQL-level names share one namespace, skipped messages are undone.
// Corpus: corpus/attacks/extended-protocol.yaml.
import { describe, expect, test } from 'vitest';
import { BackendCode } from '../../../src/wire/codes.js';
import type { Frame } from '../../../src/wire/framer.js';
import {
  bind,
  describe as describeMsg,
  execute,
  flush,
  parse,
  query,
  sync,
} from '../../../src/wire/frontend-encode.js';
import { cells, errorCodes, SSNS } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';
import type { RawClient } from '../../helpers/raw-client.js';

const fx = useProxyFixture();

/** Frames up to and including the next ErrorResponse (no ReadyForQuery follows before a Sync). */
async function untilError(c: RawClient): Promise<Frame[]> {
  const out: Frame[] = [];
  for (;;) {
    const f = await c.next();
    out.push(f);
    if (f.code === BackendCode.ErrorResponse) return out;
  }
}

describe('protocol portals and SQL cursors share one namespace upstream', () => {
  test('FETCH from a protocol-level portal returns its rows unmasked', async () => {
    const c = await fx.raw('alice');
    try {
      c.write(query('begin'));
      await c.untilReady();
      c.write(
        Buffer.concat([
          parse('s', 'select name, ssn from users order by id'),
          bind({ statement: 's', portal: 'p' }),
          sync(),
        ]),
      );
      await c.untilReady();
      c.write(query('fetch 2 from p'));
      const frames = await c.untilReady();
      const got = cells(frames);
      for (const ssn of SSNS) expect(got).not.toContain(ssn);
      // Safe: refused, or masked.
      expect(errorCodes(frames).length > 0 || got.includes('*****')).toBe(true);
    } finally {
      c.end();
    }
  });

  test('SQL EXECUTE of a protocol-level prepared statement returns its rows unmasked', async () => {
    const c = await fx.raw('alice');
    try {
      c.write(Buffer.concat([parse('q', 'select name, ssn from users order by id limit 2'), sync()]));
      await c.untilReady();
      // The SQL-level name map does not know q: "unknown name, the server's error" — but
      // Postgres has one namespace for both, and runs q.
      c.write(query('execute q'));
      const frames = await c.untilReady();
      const got = cells(frames);
      for (const ssn of SSNS) expect(got).not.toContain(ssn);
      expect(errorCodes(frames).length > 0 || got.includes('*****')).toBe(true);
    } finally {
      c.end();
    }
  });

  test('a client-named statement "pgwarden\\u0001refused" turns the refusal probe into a Bind of it', async () => {
    const c = await fx.raw('alice');
    try {
      c.write(query('begin'));
      await c.untilReady();
      // The probe name is an ordinary statement name to Postgres: the client claims it first.
      c.write(
        Buffer.concat([parse('pgwarden\u0001refused', 'select name, ssn from users order by id'), sync()]),
      );
      await c.untilReady();
      c.write(Buffer.concat([parse('', 'select id, name from users where id = 1'), bind({}), sync()]));
      await c.untilReady();
      // A refused Parse: the proxy's probe Bind('' ← probe name) now succeeds upstream, so the
      // client gets BindComplete instead of 42501, and the unnamed portal holds the ssn query.
      c.write(Buffer.concat([parse('', "select id from users where ssn = 'x'"), sync()]));
      const refusal = await c.untilReady();
      expect(errorCodes(refusal)).toEqual(['42501']);
      c.write(Buffer.concat([execute('', 3), sync()]));
      const frames = await c.untilReady();
      const got = cells(frames);
      for (const ssn of SSNS) expect(got).not.toContain(ssn);
    } finally {
      c.end();
    }
  });

  test('Execute of a portal name that a later DECLARE reused runs the cursor under the old plan', async () => {
    const c = await fx.raw('alice');
    try {
      // A harmless protocol portal "c" (gone upstream at the end of its implicit transaction,
      // but remembered by the proxy with its unmasked plan) …
      c.write(
        Buffer.concat([
          parse('s', 'select id, name from users where id = 1'),
          bind({ statement: 's', portal: 'c' }),
          execute('c'),
          sync(),
        ]),
      );
      await c.untilReady();
      // … then a SQL cursor of the same name over a hidden column, run through Execute.
      c.write(query('begin; declare c cursor for select name, ssn from users order by id'));
      await c.untilReady();
      c.write(Buffer.concat([execute('c', 3), sync()]));
      const frames = await c.untilReady();
      const got = cells(frames);
      for (const ssn of SSNS) expect(got).not.toContain(ssn);
      expect(errorCodes(frames).length > 0 || got.includes('*****')).toBe(true);
    } finally {
      c.end();
    }
  });
});

describe('extended protocol: messages the upstream ignores after an error are still recorded', () => {
  // After an error in an extended batch, Postgres ignores every message until Sync. pgwarden
  // drops the owed replies (error()), but it does not skip the client's later messages: a Parse
  // sent after the error is recorded as the statement's new plan, though the upstream never ran
  // it, and the ReadyForQuery that ends the batch drops its expectation without the undo.
  test('Parse x after an upstream error: Bind x runs the old x (ssn) under the new plan (no mask)', async () => {
    const c = await fx.raw('alice');
    try {
      c.write(Buffer.concat([parse('x', 'select id, ssn from users order by id limit 3'), sync()]));
      await c.untilReady();
      // An error in an extended batch with no Sync yet: the upstream now skips to Sync.
      c.write(Buffer.concat([parse('', 'select 1/0'), bind({}), execute(''), flush()]));
      expect(errorCodes(await untilError(c))).toEqual(['22012']);
      // Ignored upstream (x keeps the ssn query); recorded by pgwarden as x = an unmasked query.
      c.write(Buffer.concat([parse('x', 'select id, name from users order by id limit 3'), sync()]));
      await c.untilReady();
      c.write(Buffer.concat([bind({ statement: 'x' }), execute(''), sync()]));
      const frames = await c.untilReady();
      const got = cells(frames);
      for (const ssn of SSNS) expect(got).not.toContain(ssn);
    } finally {
      c.end();
    }
  });
});

describe('pipelines and cursors', () => {
  test('alice: a SQL cursor Described through the protocol keeps its mask after SET search_path', async () => {
    const c = await fx.raw('alice');
    try {
      c.write(query('begin; declare c1 cursor for select id, ssn from users order by id'));
      await c.untilReady();
      c.write(query('set search_path = pg_catalog'));
      await c.untilReady();
      c.write(Buffer.concat([describeMsg('P', 'c1'), execute('c1', 3), sync()]));
      const frames = await c.untilReady();
      const got = cells(frames);
      expect(got.length).toBe(6);
      for (const ssn of SSNS) expect(got).not.toContain(ssn);
      c.write(query('rollback'));
      await c.untilReady();
    } finally {
      c.end();
    }
  });

  test('alice: Parse after an error in a pipeline is skipped, not recorded', async () => {
    const c = await fx.raw('alice');
    try {
      c.write(
        Buffer.concat([
          parse('s1', 'select id, ssn from users order by id limit 3'),
          parse('', 'select 1/0'),
          bind({}),
          execute(''),
          parse('s1', 'select id, name from users order by id limit 3'),
          sync(),
        ]),
      );
      expect(errorCodes(await c.untilReady())).toEqual(['22012']);
      c.write(Buffer.concat([bind({ statement: 's1' }), execute(''), sync()]));
      const got = cells(await c.untilReady());
      for (const ssn of SSNS) expect(got).not.toContain(ssn);
    } finally {
      c.end();
    }
  });
});
