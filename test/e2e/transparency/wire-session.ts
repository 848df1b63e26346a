// A protocol-level session for the transparency suite: runs one case in simple or extended mode and writes a comparable transcript.
import crypto from 'node:crypto';
import { ScramClientExchange } from '../../../src/auth/scram-client.js';
import {
  decodeAuthentication,
  decodeCommandComplete,
  decodeDataRow,
  decodeNotificationResponse,
  decodeParameterDescription,
  decodeParameterStatus,
  decodeReadyForQuery,
  decodeRowDescription,
} from '../../../src/wire/backend.js';
import { BackendCode } from '../../../src/wire/codes.js';
import { decodeErrorResponse, type ErrorFields } from '../../../src/wire/error-fields.js';
import type { Frame } from '../../../src/wire/framer.js';
import {
  bind,
  copyData,
  copyDone,
  describe,
  execute,
  flush,
  parse,
  passwordMessage,
  query,
  saslInitialResponse,
  saslResponse,
  startupMessage,
  sync,
} from '../../../src/wire/frontend-encode.js';
import { RawClient } from '../../helpers/raw-client.js';

/** How a case is sent: one Query message, or Parse/Bind/Describe/Execute/Sync asking for text or binary results. */
export type Mode = 'simple' | 'text' | 'binary';

/** One statement list entry of cases.sql. */
export interface Case {
  readonly line: number;
  readonly sql: string;
  readonly modes: readonly Mode[];
  /** Bind parameters in text format (null for NULL); a case with parameters runs in the extended modes only. */
  readonly params?: readonly (string | null)[];
  /** COPY FROM STDIN data, sent as one CopyData message. */
  readonly copy?: string;
  /** A difference DESIGN.md gives a reason for: pgwarden answers with this SQLSTATE instead. */
  readonly differs?: { readonly sqlstate: string; readonly reason: string };
  /** Run directly inside BEGIN … ROLLBACK, so that a setting pgwarden refuses does not change the direct session. */
  readonly isolate?: boolean;
}

/** The statement list of a cases file: setup SQL and cases. */
export interface CaseFile {
  readonly setup: string;
  readonly cases: Case[];
}

/**
 * Parses the cases format: `-- @setup` opens the setup SQL; `-- @case [modes=a,b] [isolate] [differs=SQLSTATE | reason]`
 * opens a case whose SQL runs to the next directive; `-- @copy` opens the case's COPY data (tabs kept);
 * `-- @params` opens its Bind parameters, one per line in text format, `\N` for NULL, blank lines ignored (extended modes only).
 * Other `--` comment lines outside a case's SQL are notes.
 */
export function parseCases(text: string): CaseFile {
  const lines = text.split('\n');
  let setup = '';
  const cases: Case[] = [];
  let cur:
    | {
        line: number;
        sql: string[];
        copy?: string[];
        params?: (string | null)[];
        modes: Mode[];
        differs?: Case['differs'];
        isolate: boolean;
      }
    | undefined;
  let section: 'none' | 'setup' | 'sql' | 'copy' | 'params' = 'none';
  const finish = () => {
    if (!cur) return;
    const sql = cur.sql.join('\n').trim();
    if (sql === '') throw new Error(`cases: empty case at line ${cur.line}`);
    const modes = cur.params ? cur.modes.filter((m) => m !== 'simple') : cur.modes;
    cases.push({
      line: cur.line,
      sql,
      modes,
      ...(cur.params ? { params: cur.params } : {}),
      ...(cur.copy ? { copy: copyText(cur.copy) } : {}),
      ...(cur.differs ? { differs: cur.differs } : {}),
      ...(cur.isolate ? { isolate: true } : {}),
    });
    cur = undefined;
  };
  lines.forEach((l, i) => {
    if (l.startsWith('-- @setup')) {
      finish();
      section = 'setup';
    } else if (l.startsWith('-- @case')) {
      finish();
      const opts = l.slice('-- @case'.length);
      const [head = '', reason] = opts.split('|', 2);
      let modes: Mode[] = ['simple', 'text', 'binary'];
      let differs: Case['differs'];
      let isolate = false;
      for (const tok of head.trim().split(/\s+/).filter(Boolean)) {
        const [k, v = ''] = tok.split('=', 2);
        if (k === 'modes') modes = v.split(',') as Mode[];
        else if (k === 'isolate') isolate = true;
        else if (k === 'differs') {
          if (!reason?.trim()) throw new Error(`cases: line ${i + 1}: differs= needs "| reason"`);
          differs = { sqlstate: v, reason: reason.trim() };
        } else throw new Error(`cases: line ${i + 1}: unknown option ${tok}`);
      }
      for (const m of modes)
        if (!['simple', 'text', 'binary'].includes(m)) throw new Error(`cases: line ${i + 1}: mode ${m}`);
      cur = { line: i + 1, sql: [], modes, isolate, ...(differs ? { differs } : {}) };
      section = 'sql';
    } else if (l.startsWith('-- @copy')) {
      if (!cur) throw new Error(`cases: line ${i + 1}: @copy outside a case`);
      cur.copy = [];
      section = 'copy';
    } else if (l.startsWith('-- @params')) {
      if (!cur) throw new Error(`cases: line ${i + 1}: @params outside a case`);
      cur.params = [];
      section = 'params';
    } else if (section === 'params') {
      if (l.startsWith('--') || l === '') return;
      cur?.params?.push(l === '\\N' ? null : l);
    } else if (section === 'setup') setup += `${l}\n`;
    else if (section === 'sql') {
      if (!l.startsWith('--')) cur?.sql.push(l);
    } else if (section === 'copy') cur?.copy?.push(l);
  });
  finish();
  return { setup, cases };
}

/** COPY data lines as sent: each line ends in a newline; no lines, no bytes. */
function copyText(lines: string[]): string {
  const text = lines.join('\n').replace(/\n+$/, '');
  return text === '' ? '' : `${text}\n`;
}

/** Rows shown in a transcript before the rest is summarised by count and hash. */
const SHOWN_ROWS = 3;

/** A logged-in protocol session. */
export class WireSession {
  /** The OID above which a relation or type was created after the template was copied (renumbered per case). */
  private constructor(
    private readonly c: RawClient,
    readonly backendPid: number,
    private readonly newOidAbove: number,
    /** The ParameterStatus values sent during startup. */
    readonly startupParams: ReadonlyMap<string, string>,
  ) {}

  /** Connects to 127.0.0.1:`port` as `user` (SCRAM or cleartext, as the server asks). */
  static async open(
    port: number,
    user: string,
    password: string,
    database: string,
    newOidAbove: number,
  ): Promise<WireSession> {
    const c = await RawClient.connect(port);
    c.write(
      startupMessage(
        new Map([
          ['user', user],
          ['database', database],
        ]),
      ),
    );
    let scram: ScramClientExchange | undefined;
    const params = new Map<string, string>();
    for (;;) {
      const f = await c.next();
      if (f.code === BackendCode.ParameterStatus) {
        const p = decodeParameterStatus(f.payload);
        params.set(p.name, p.value);
      }
      if (f.code === BackendCode.ErrorResponse)
        throw new Error(`login failed: ${decodeErrorResponse(f.payload).message}`);
      if (f.code === BackendCode.ReadyForQuery) break;
      if (f.code !== BackendCode.Authentication) continue;
      const a = decodeAuthentication(f.payload);
      if (a.type === 'cleartext') c.write(passwordMessage(password));
      else if (a.type === 'sasl') {
        scram = new ScramClientExchange(password);
        c.write(saslInitialResponse('SCRAM-SHA-256', scram.clientFirst()));
      } else if (a.type === 'sasl-continue' && scram) c.write(saslResponse(scram.clientFinal(a.data)));
      else if (a.type === 'sasl-final' && scram) scram.verifyServerFinal(a.data);
    }
    const s = new WireSession(c, 0, newOidAbove, params);
    const r = await s.run({ line: 0, sql: 'select pg_backend_pid()', modes: ['simple'] }, 'simple');
    const pid = Number(/^D \["(\d+)"\]$/m.exec(r.join('\n'))?.[1]);
    return new WireSession(c, pid, newOidAbove, params);
  }

  close(): void {
    this.c.end();
  }

  /** Runs `k` in `mode` and returns its transcript: every backend message up to ReadyForQuery, normalised only where noted. */
  async run(k: Case, mode: Mode): Promise<string[]> {
    const copy = k.copy !== undefined;
    if (mode === 'simple') this.c.write(query(k.sql));
    else {
      this.c.write(
        Buffer.concat([
          parse('', k.sql),
          bind({
            params: (k.params ?? []).map((p) => (p === null ? null : Buffer.from(p, 'utf8'))),
            resultFormats: [mode === 'binary' ? 1 : 0],
          }),
          describe('P'),
          execute(),
          copy ? flush() : sync(),
        ]),
      );
    }
    const out: string[] = [];
    const oids = new Map<number, string>();
    const oid = (n: number): string => {
      if (n <= this.newOidAbove) return String(n);
      let v = oids.get(n);
      if (!v) {
        v = `new#${oids.size + 1}`;
        oids.set(n, v);
      }
      return v;
    };
    let rows = 0;
    let hash = crypto.createHash('sha256');
    let copyBytes = 0;
    let copyHash = crypto.createHash('sha256');
    let synced = mode === 'simple' || !copy;
    const flushRows = () => {
      if (rows > SHOWN_ROWS) out.push(`D… ${rows} rows sha256=${hash.digest('hex').slice(0, 16)}`);
      rows = 0;
      hash = crypto.createHash('sha256');
    };
    for (;;) {
      const f: Frame = await this.c.next(20_000);
      if (f.code !== BackendCode.DataRow) flushRows();
      switch (f.code) {
        case BackendCode.DataRow: {
          rows++;
          hash.update(f.payload);
          if (rows <= SHOWN_ROWS) out.push(`D ${cells(decodeDataRow(f.payload), mode)}`);
          break;
        }
        case BackendCode.RowDescription:
          out.push(
            `T ${decodeRowDescription(f.payload)
              .map(
                (d) =>
                  `${d.name}:${oid(d.typeOid)}/${d.typeSize}/${d.typeModifier}/${d.format}@${oid(d.tableOid)}.${d.columnAttnum}`,
              )
              .join(' ')}`,
          );
          break;
        case BackendCode.ParameterDescription:
          out.push(`t ${decodeParameterDescription(f.payload).map(oid).join(',')}`);
          break;
        case BackendCode.CommandComplete:
          out.push(`C ${decodeCommandComplete(f.payload)}`);
          break;
        case BackendCode.ErrorResponse:
          out.push(`E ${fields(decodeErrorResponse(f.payload))}`);
          if (!synced) {
            this.c.write(sync());
            synced = true;
          }
          break;
        case BackendCode.NoticeResponse:
          out.push(`N ${fields(decodeErrorResponse(f.payload))}`);
          break;
        case BackendCode.NotificationResponse: {
          const n = decodeNotificationResponse(f.payload);
          out.push(
            `A ${n.channel} ${JSON.stringify(n.payload)} from ${n.processId === this.backendPid ? 'self' : 'other'}`,
          );
          break;
        }
        case BackendCode.ParameterStatus: {
          const p = decodeParameterStatus(f.payload);
          out.push(`S ${p.name}=${p.value}`);
          break;
        }
        case BackendCode.CopyInResponse:
          out.push(`G ${f.payload.toString('hex')}`);
          this.c.write(
            Buffer.concat([
              copyData(Buffer.from(k.copy ?? '', 'utf8')),
              copyDone(),
              ...(synced ? [] : [sync()]),
            ]),
          );
          synced = true;
          break;
        case BackendCode.CopyOutResponse:
          out.push(`H ${f.payload.toString('hex')}`);
          break;
        case BackendCode.CopyData:
          copyBytes += f.payload.length;
          copyHash.update(f.payload);
          break;
        case BackendCode.CopyDone:
          out.push(`c ${copyBytes} bytes sha256=${copyHash.digest('hex').slice(0, 16)}`);
          copyBytes = 0;
          copyHash = crypto.createHash('sha256');
          break;
        case BackendCode.ReadyForQuery:
          out.push(`Z ${decodeReadyForQuery(f.payload)}`);
          return out;
        default:
          // ParseComplete, BindComplete, NoData, EmptyQueryResponse, PortalSuspended, CloseComplete.
          out.push(String.fromCharCode(f.code));
      }
    }
  }
}

function cells(values: (Buffer | null)[], mode: Mode): string {
  return JSON.stringify(
    values.map((v) => (v === null ? null : mode === 'binary' ? v.toString('hex') : v.toString('utf8'))),
  );
}

/** Every field of an ErrorResponse/NoticeResponse but the server's source location (file, line, routine). */
function fields(e: ErrorFields): string {
  const { file: _f, line: _l, routine: _r, unknownFields, ...rest } = e;
  return JSON.stringify({ ...rest, ...(unknownFields ? { unknown: [...unknownFields] } : {}) });
}
