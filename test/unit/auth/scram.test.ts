// SCRAM-SHA-256: RFC 7677 vector, our client against our server, verifiers made by PostgreSQL, login into a real server.
import fs from 'node:fs';
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { saslPrep } from '../../../src/auth/saslprep.js';
import { ScramClientExchange } from '../../../src/auth/scram-client.js';
import { ScramError } from '../../../src/auth/scram-error.js';
import { ScramServerExchange } from '../../../src/auth/scram-server.js';
import { createScramVerifier, parseScramVerifier } from '../../../src/auth/scram-verifier.js';

// RFC 7677 §3: user "user", password "pencil".
const RFC = {
  clientNonce: 'rOprNGfwEbeRWgbNEkqO',
  serverNonce: '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  clientFirst: 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
  serverFirst: 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal:
    'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

const b = (s: string) => Buffer.from(s, 'latin1');

/** Runs our client against our server; returns the server's verdict (and checks the server signature). */
function exchange(password: string, verifier: string | null, user = 'alice'): boolean {
  const parsed = verifier === null ? null : parseScramVerifier(verifier);
  const server = new ScramServerExchange(parsed, { user });
  const client = new ScramClientExchange(password);
  const serverFirst = server.clientFirst(client.clientFirst());
  const result = server.clientFinal(client.clientFinal(serverFirst));
  if (result.ok) client.verifyServerFinal(result.serverFinal);
  return result.ok;
}

function expectScramError(fn: () => unknown, sqlstate: string, message?: RegExp): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ScramError);
    expect((e as ScramError).sqlstate).toBe(sqlstate);
    if (message) expect((e as ScramError).message).toMatch(message);
    return;
  }
  throw new Error('expected a ScramError');
}

describe('RFC 7677 test vector', () => {
  it('client produces the RFC messages and accepts the RFC server signature', () => {
    const client = new ScramClientExchange('pencil', { nonce: RFC.clientNonce, user: 'user' });
    expect(client.clientFirst().toString()).toBe(RFC.clientFirst);
    expect(client.clientFinal(b(RFC.serverFirst)).toString()).toBe(RFC.clientFinal);
    expect(() => client.verifyServerFinal(b(RFC.serverFinal))).not.toThrow();
  });

  it('server produces the RFC messages from a verifier', () => {
    const verifier = createScramVerifier('pencil', {
      salt: Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'),
      iterations: 4096,
    });
    const server = new ScramServerExchange(parseScramVerifier(verifier), { serverNonce: RFC.serverNonce });
    expect(server.clientFirst(b(RFC.clientFirst)).toString()).toBe(RFC.serverFirst);
    const result = server.clientFinal(b(RFC.clientFinal));
    expect(result).toEqual({ ok: true, serverFinal: b(RFC.serverFinal) });
  });

  it('client rejects a wrong server signature (28000)', () => {
    const client = new ScramClientExchange('pencil', { nonce: RFC.clientNonce, user: 'user' });
    client.clientFirst();
    client.clientFinal(b(RFC.serverFirst));
    const bad = `v=${Buffer.alloc(32, 1).toString('base64')}`;
    expectScramError(() => client.verifyServerFinal(b(bad)), '28000', /incorrect server signature/);
  });
});

describe('verifiers', () => {
  it('round-trips through the stored format', () => {
    const salt = Buffer.from('0123456789abcdef');
    const v = createScramVerifier('secret', { iterations: 1000, salt });
    expect(v).toMatch(/^SCRAM-SHA-256\$1000:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$/);
    const p = parseScramVerifier(v);
    expect(p?.iterations).toBe(1000);
    expect(p?.salt.equals(salt)).toBe(true);
    expect(p?.storedKey.length).toBe(32);
    expect(p?.serverKey.length).toBe(32);
    const again = `SCRAM-SHA-256$${p?.iterations}:${p?.salt.toString('base64')}$${p?.storedKey.toString('base64')}:${p?.serverKey.toString('base64')}`;
    expect(again).toBe(v);
  });

  it('defaults to 4096 iterations and a fresh 16-byte salt', () => {
    const a = parseScramVerifier(createScramVerifier('x'));
    const c = parseScramVerifier(createScramVerifier('x'));
    expect(a?.iterations).toBe(4096);
    expect(a?.salt.length).toBe(16);
    expect(a?.salt.equals(c?.salt ?? Buffer.alloc(0))).toBe(false);
  });

  it('parse returns null for anything that is not a SCRAM-SHA-256 verifier', () => {
    const good = createScramVerifier('x', { iterations: 10 });
    for (const bad of [
      '',
      'md5a3556571e93b0d20722ba62be61e8c2d',
      'x',
      good.replace('SCRAM-SHA-256', 'SCRAM-SHA-1'),
      good.replace('$10:', '$0:'),
      good.replace('$10:', '$-1:'),
      good.replace('$10:', '$:'),
      `${good}=`,
      `${good.slice(0, -4)}!!!=`,
      good.replace(/:[^:$]+\$/, ':$'),
      `${good}$extra`,
    ]) {
      expect(parseScramVerifier(bad), bad).toBeNull();
    }
    expect(() => createScramVerifier('x', { iterations: 0 })).toThrow(RangeError);
    expect(() => createScramVerifier('x', { salt: Buffer.alloc(0) })).toThrow(RangeError);
  });
});

describe('SASLprep', () => {
  it('passes ASCII through unchanged, control characters included', () => {
    expect(saslPrep('pencil').toString()).toBe('pencil');
    expect(saslPrep('a\tb').toString('latin1')).toBe('a\tb');
  });

  it('maps non-ASCII spaces to space, removes B.1 characters, applies NFKC', () => {
    expect(saslPrep('I\u00ADX').toString()).toBe('IX'); // soft hyphen mapped to nothing (RFC 4013 §3 example)
    expect(saslPrep('a\u00A0b').toString()).toBe('a b');
    expect(saslPrep('\u2168').toString()).toBe('IX'); // ROMAN NUMERAL NINE → NFKC "IX"
    expect(saslPrep('\u00AA').toString()).toBe('a');
    expect(saslPrep('ﬁx').toString()).toBe('fix');
  });

  it('falls back to the raw bytes when the prepared string would be prohibited', () => {
    // U+0007 is prohibited (C.2.1) but only checked for non-ASCII input; U+FB01 would otherwise be mapped.
    expect(saslPrep('\u0007ﬁ').equals(Buffer.from('\u0007ﬁ'))).toBe(true);
    // Private use (C.3).
    expect(saslPrep('ﬁ\uE000').equals(Buffer.from('ﬁ\uE000'))).toBe(true);
    // Bidi: R/AL mixed with L.
    expect(saslPrep('\u0627ﬁ').equals(Buffer.from('\u0627ﬁ'))).toBe(true);
    // Only mapped-to-nothing characters: empty after mapping.
    expect(saslPrep('\u00AD').equals(Buffer.from('\u00AD'))).toBe(true);
    // Invalid UTF-8 bytes.
    const raw = Buffer.from([0xff, 0xfe, 0x41]);
    expect(saslPrep(raw).equals(raw)).toBe(true);
    expect(() => saslPrep('a\uD800')).toThrow(TypeError);
  });

  it('a verifier made from a composed password accepts its NFKC equivalent', () => {
    const v = createScramVerifier('\uFB01le', { iterations: 64 });
    expect(exchange('file', v)).toBe(true);
  });
});

describe('our client against our server', () => {
  const verifier = createScramVerifier('correct horse', { iterations: 256 });

  it('succeeds with the right password', () => {
    expect(exchange('correct horse', verifier)).toBe(true);
  });

  it('fails with a wrong password', () => {
    expect(exchange('wrong horse', verifier)).toBe(false);
  });

  it('fails for an unknown user, with the same messages a known user gets', () => {
    expect(exchange('correct horse', null, 'nobody')).toBe(false);
    const s1 = new ScramServerExchange(null, { user: 'nobody', mockSecret: Buffer.from('k') });
    const s2 = new ScramServerExchange(null, { user: 'nobody', mockSecret: Buffer.from('k') });
    const s3 = new ScramServerExchange(null, { user: 'other', mockSecret: Buffer.from('k') });
    const first = b('n,,n=,r=abc');
    const salt = (m: Buffer) => /,s=([^,]+),/.exec(m.toString())?.[1];
    const f1 = s1.clientFirst(first);
    // The fake salt is deterministic per user, 16 bytes like a real one, and differs between users.
    expect(salt(f1)).toBe(salt(s2.clientFirst(first)));
    expect(salt(f1)).not.toBe(salt(s3.clientFirst(first)));
    expect(Buffer.from(salt(f1) ?? '', 'base64').length).toBe(16);
    expect(f1.toString()).toMatch(/^r=abc[A-Za-z0-9+/=]{24},s=[A-Za-z0-9+/=]{24},i=4096$/);
  });

  it('accepts the "y" channel-binding flag with c=eSws', () => {
    const server = new ScramServerExchange(parseScramVerifier(verifier));
    const client = new ScramClientExchange('correct horse', { nonce: 'clientnonce' });
    client.clientFirst();
    const serverFirst = server.clientFirst(b('y,,n=,r=clientnonce'));
    const final = client.clientFinal(serverFirst).toString().replace('c=biws', 'c=eSws');
    // The proof covers c=biws, so the password check fails, but the echo itself is accepted.
    expect(server.clientFinal(b(final))).toEqual({ ok: false });
  });

  it('accepts an empty n= user name, as libpq sends', () => {
    const v = createScramVerifier('pencil', { salt: Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64') });
    const server = new ScramServerExchange(parseScramVerifier(v), { serverNonce: 'SN' });
    server.clientFirst(b('n,,n=,r=CN'));
    const client = new ScramClientExchange('pencil', { nonce: 'CN', user: '' });
    client.clientFirst();
    const final = client.clientFinal(b(`r=CNSN,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096`));
    const result = server.clientFinal(final);
    expect(result.ok).toBe(true);
    if (result.ok) client.verifyServerFinal(result.serverFinal);
  });
});

describe('server rejects malformed and unsupported messages', () => {
  const parsed = parseScramVerifier(createScramVerifier('pw', { iterations: 16 }));
  const fresh = () => new ScramServerExchange(parsed, { serverNonce: 'SN' });

  it('refuses channel binding it cannot honour (p=) with 08P01', () => {
    expectScramError(() => fresh().clientFirst(b('p=tls-server-end-point,,n=,r=abc')), '08P01', /PLUS/);
  });

  it('refuses an authorization identity and mandatory extensions with 0A000', () => {
    expectScramError(() => fresh().clientFirst(b('n,a=bob,n=,r=abc')), '0A000');
    expectScramError(() => fresh().clientFirst(b('n,,m=ext,n=,r=abc')), '0A000');
  });

  it('throws 08P01 for malformed client-first-messages', () => {
    for (const m of ['', 'x,,n=,r=abc', 'n', 'n,,r=abc', 'n,,n=', 'n,,n=,r=', 'n,,n=,r=a b', 'n,,n=,r=a\0']) {
      expectScramError(() => fresh().clientFirst(b(m)), '08P01');
    }
  });

  it('throws 08P01 for a wrong channel-binding echo, a wrong nonce, a bad proof, or order', () => {
    const proof = `p=${Buffer.alloc(32).toString('base64')}`;
    const cases = [
      `c=eSws,r=abcSN,${proof}`, // echo of "y,," after "n,,"
      `c=biws,r=abcXX,${proof}`, // nonce mismatch
      `c=biws,r=abc,${proof}`, // only the client part
      `c=biws,r=abcSN,p=AAAA`, // short proof
      `c=biws,r=abcSN,p=!!!`, // not base64
      `c=biws,r=abcSN`, // no proof
      `r=abcSN,c=biws,${proof}`, // order
      `c=biws,r=abcSN,${proof},x=1`, // garbage after the proof
    ];
    for (const m of cases) {
      const s = fresh();
      s.clientFirst(b('n,,n=,r=abc'));
      expectScramError(() => s.clientFinal(b(m)), '08P01');
    }
    expectScramError(() => fresh().clientFinal(b(`c=biws,r=abcSN,${proof}`)), '08P01');
    const s = fresh();
    s.clientFirst(b('n,,n=,r=abc'));
    expectScramError(() => s.clientFirst(b('n,,n=,r=abc')), '08P01');
  });

  it('ignores optional extensions, as PostgreSQL does', () => {
    const s = fresh();
    s.clientFirst(b('n,,n=,r=abc,x=1'));
    const proof = `p=${Buffer.alloc(32).toString('base64')}`;
    expect(s.clientFinal(b(`c=biws,r=abcSN,x=2,${proof}`))).toEqual({ ok: false });
  });

  it('client rejects a server nonce that does not extend its own, and bad salts/iterations', () => {
    for (const m of [
      'r=other,s=AAAA,i=1',
      'r=CN,s=AAAA,i=1',
      'r=CNSN,s=!!,i=1',
      'r=CNSN,s=AAAA,i=0',
      'r=CNSN,s=AAAA,i=x',
      'm=1,r=CNSN,s=AAAA,i=1',
    ]) {
      const c = new ScramClientExchange('pw', { nonce: 'CN' });
      c.clientFirst();
      expectScramError(() => c.clientFinal(b(m)), '08P01');
    }
    const c = new ScramClientExchange('pw', { nonce: 'CN' });
    c.clientFirst();
    c.clientFinal(b('r=CNSN,s=AAAA,i=1'));
    expectScramError(() => c.verifyServerFinal(b('e=invalid-proof')), '28000');
  });
});

// ---------------------------------------------------------------------------------------------
// Against the embedded PostgreSQL 15.
// ---------------------------------------------------------------------------------------------

interface Reply {
  type: string;
  body: Buffer;
}

/** A bare v3 protocol connection: just enough to run the SASL exchange. */
class WireConn {
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private closed = false;
  private constructor(private readonly sock: net.Socket) {
    sock.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      for (const w of this.waiters.splice(0)) w();
    });
    sock.on('close', () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async open(host: string, port: number): Promise<WireConn> {
    const sock = net.connect(port, host);
    await new Promise<void>((resolve, reject) => {
      sock.once('connect', resolve);
      sock.once('error', reject);
    });
    return new WireConn(sock);
  }

  send(type: string | null, body: Buffer): void {
    const len = Buffer.alloc(4);
    len.writeInt32BE(body.length + 4);
    this.sock.write(type === null ? Buffer.concat([len, body]) : Buffer.concat([b(type), len, body]));
  }

  async read(): Promise<Reply> {
    for (;;) {
      if (this.buf.length >= 5) {
        const len = this.buf.readInt32BE(1);
        if (this.buf.length >= len + 1) {
          const reply = { type: String.fromCharCode(this.buf[0]!), body: this.buf.subarray(5, len + 1) };
          this.buf = this.buf.subarray(len + 1);
          return reply;
        }
      }
      if (this.closed) throw new Error('connection closed');
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  close(): void {
    this.sock.end();
  }
}

function cstrings(...parts: string[]): Buffer {
  return Buffer.concat(parts.map((p) => Buffer.from(`${p}\0`, 'utf8')));
}

function errorFields(body: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < body.length && body[i] !== 0) {
    const code = String.fromCharCode(body[i]!);
    const end = body.indexOf(0, i + 1);
    out[code] = body.subarray(i + 1, end).toString('utf8');
    i = end + 1;
  }
  return out;
}

type LoginResult =
  | { outcome: 'ok' }
  | { outcome: 'error'; sqlstate: string }
  | { outcome: 'not-sasl'; code: number };

/** Logs in with ScramClientExchange over a raw socket; reports how it ended. */
async function scramLogin(host: string, port: number, user: string, password: string): Promise<LoginResult> {
  const conn = await WireConn.open(host, port);
  try {
    const version = Buffer.alloc(4);
    version.writeInt32BE(196608);
    conn.send(
      null,
      Buffer.concat([version, cstrings('user', user, 'database', 'postgres'), Buffer.from([0])]),
    );
    const client = new ScramClientExchange(password);
    for (;;) {
      const m = await conn.read();
      if (m.type === 'E') return { outcome: 'error', sqlstate: errorFields(m.body).C ?? '' };
      if (m.type === 'Z') {
        conn.send('X', Buffer.alloc(0));
        return { outcome: 'ok' };
      }
      if (m.type !== 'R') continue;
      const code = m.body.readInt32BE(0);
      const data = m.body.subarray(4);
      if (code === 10) {
        expect(data.toString('latin1').split('\0')).toContain('SCRAM-SHA-256');
        const first = client.clientFirst();
        const len = Buffer.alloc(4);
        len.writeInt32BE(first.length);
        conn.send('p', Buffer.concat([cstrings('SCRAM-SHA-256'), len, first]));
      } else if (code === 11) {
        conn.send('p', client.clientFinal(data));
      } else if (code === 12) {
        client.verifyServerFinal(data);
      } else if (code !== 0) {
        return { outcome: 'not-sasl', code };
      }
    }
  } finally {
    conn.close();
  }
}

describe('against PostgreSQL 15', () => {
  const server = inject('pg');
  const ROLE = 'scram_t';
  const HBA_LINE = `host all ${ROLE} 127.0.0.1/32 scram-sha-256 # pgwarden scram test\n`;
  let admin: pg.Client;
  let hbaFile = '';
  let hbaOriginal: string | null = null;

  beforeAll(async () => {
    admin = new pg.Client({
      host: server.host,
      port: server.port,
      user: server.superuser,
      password: server.superuserPassword,
      database: 'postgres',
    });
    await admin.connect();
    await admin.query(`DROP ROLE IF EXISTS ${ROLE}`);
    await admin.query(`CREATE ROLE ${ROLE} LOGIN PASSWORD 'x'`);
    // The embedded server authenticates with `password` (cleartext); let this one role use SCRAM.
    // The line names only our role, so no other test's logins change.
    hbaFile = (await admin.query('SHOW hba_file')).rows[0].hba_file as string;
    hbaOriginal = fs.readFileSync(hbaFile, 'utf8');
    fs.writeFileSync(hbaFile, HBA_LINE + hbaOriginal);
    await admin.query('SELECT pg_reload_conf()');
    // The postmaster reloads asynchronously: wait until the role is offered SASL.
    for (let i = 0; i < 50; i++) {
      const r = await scramLogin(server.host, server.port, ROLE, 'x').catch(() => null);
      if (r && !(r.outcome === 'not-sasl')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  afterAll(async () => {
    if (hbaOriginal !== null) {
      const now = fs.readFileSync(hbaFile, 'utf8');
      fs.writeFileSync(hbaFile, now.replace(HBA_LINE, ''));
      await admin.query('SELECT pg_reload_conf()');
    }
    await admin.query(`DROP ROLE IF EXISTS ${ROLE}`);
    await admin.end();
  });

  it('a verifier made by PostgreSQL parses, and our server accepts our client with its password', async () => {
    const res = await admin.query('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [ROLE]);
    const stored = res.rows[0].rolpassword as string;
    expect(stored).toMatch(/^SCRAM-SHA-256\$4096:/);
    const parsed = parseScramVerifier(stored);
    expect(parsed).not.toBeNull();
    expect(exchange('x', stored)).toBe(true);
    expect(exchange('y', stored)).toBe(false);
    // And our own verifier for the same password and salt is byte-identical to PostgreSQL's.
    expect(createScramVerifier('x', { salt: parsed?.salt, iterations: parsed?.iterations })).toBe(stored);
  });

  it('PostgreSQL makes the same verifier as we do for a non-ASCII password (SASLprep)', async () => {
    const pw = '\u2168 caf\u00e9\u00a0\u00ad';
    await admin.query(`ALTER ROLE ${ROLE} PASSWORD ${admin.escapeLiteral(pw)}`);
    try {
      const res = await admin.query('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [ROLE]);
      const stored = res.rows[0].rolpassword as string;
      const parsed = parseScramVerifier(stored);
      expect(createScramVerifier(pw, { salt: parsed?.salt, iterations: parsed?.iterations })).toBe(stored);
      expect(exchange('IX café ', stored)).toBe(true);
    } finally {
      await admin.query(`ALTER ROLE ${ROLE} PASSWORD 'x'`);
    }
  });

  it('ScramClientExchange logs into PostgreSQL, as pg does; a wrong password gets 28P01', async () => {
    expect(await scramLogin(server.host, server.port, ROLE, 'x')).toEqual({ outcome: 'ok' });
    expect(await scramLogin(server.host, server.port, ROLE, 'nope')).toEqual({
      outcome: 'error',
      sqlstate: '28P01',
    });
    const viaPg = new pg.Client({
      host: server.host,
      port: server.port,
      user: ROLE,
      password: 'x',
      database: 'postgres',
    });
    await viaPg.connect();
    await viaPg.end();
  });
});
