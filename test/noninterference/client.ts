// A protocol-level session through pgwarden that records everything an answer consists of, as comparable text.
import crypto from 'node:crypto';
import {
  decodeCommandComplete,
  decodeDataRow,
  decodeNotificationResponse,
  decodeParameterStatus,
  decodeReadyForQuery,
  decodeRowDescription,
} from '../../src/wire/backend.js';
import { BackendCode } from '../../src/wire/codes.js';
import { decodeErrorResponse, type ErrorFields } from '../../src/wire/error-fields.js';
import { bind, copyFail, describe, execute, parse, query, sync } from '../../src/wire/frontend-encode.js';
import { RawClient } from '../helpers/raw-client.js';

/** DataRows kept readable per answer; the rest only count and hash. */
const ROWS_KEPT = 40;
/** How long one exchange may take before the session is declared stuck. */
const EXCHANGE_MS = 30_000;

/** One exchange (up to ReadyForQuery), as lines of text: every message, normalized. */
export interface Answer {
  readonly lines: string[];
  /** Any DataRow cell was the mask text. */
  readonly masked: boolean;
  /** The first ErrorResponse, when there was one. */
  readonly error?: ErrorFields;
  /** The connection was closed (FATAL or otherwise). */
  readonly closed: boolean;
}

/** Text that differs between the sides for reasons that are not hidden values. */
export type Normalizer = (s: string) => string;

function errorLine(tag: string, e: ErrorFields, norm: Normalizer): string {
  const o: Record<string, unknown> = { ...e };
  delete o.unknownFields;
  return `${tag} ${norm(JSON.stringify(o))}`;
}

/** A logged-in session; `run` sends one or more messages and records the answer up to ReadyForQuery. */
export class AnswerSession {
  private constructor(
    private readonly raw: RawClient,
    private readonly norm: Normalizer,
  ) {}

  static async open(
    port: number,
    user: string,
    database: string,
    norm: Normalizer,
    params: Record<string, string> = {},
  ): Promise<AnswerSession> {
    const raw = await RawClient.connect(port);
    await raw.login({ user, database, ...params }, user);
    return new AnswerSession(raw, norm);
  }

  get closed(): boolean {
    return this.raw.closed;
  }

  close(): void {
    this.raw.end();
  }

  /**
   * Sends the messages of every part back to back (one write), then reads one Answer per part:
   * a simple Query, or Parse/Bind (text or binary results)/Describe portal/Execute/Sync.
   */
  /** The SQL of the part being collected (EXPLAIN's plan text is not compared). */
  private currentSql = '';

  async pipeline(parts: readonly { sql: string; extended?: 0 | 1 }[]): Promise<Answer[]> {
    this.raw.write(
      Buffer.concat(
        parts.flatMap((p) =>
          p.extended === undefined
            ? [query(p.sql)]
            : [parse('', p.sql), bind({ resultFormats: [p.extended] }), describe('P'), execute(), sync()],
        ),
      ),
    );
    const out: Answer[] = [];
    for (let i = 0; i < parts.length; i++) {
      this.currentSql = parts[i]?.sql ?? '';
      const a = await this.collect();
      out.push(a);
      if (a.closed) break;
    }
    return out;
  }

  private async collect(): Promise<Answer> {
    const lines: string[] = [];
    let masked = false;
    let error: ErrorFields | undefined;
    let formats: number[] = [];
    // Rows are compared as a multiset: without an ORDER BY that makes it total, Postgres's row
    // order follows the plan, and the plan follows table sizes (relpages), which hidden values'
    // lengths change — a coarse channel pg_relation_size() shows anyway, listed in the README.
    // EXPLAIN's plan text is left out for the same reason (plan shape, not values).
    let rowLines: string[] = [];
    const explain = /^\s*explain\b/i.test(this.currentSql);
    const flushRows = () => {
      rowLines.sort();
      const kept = rowLines.slice(0, ROWS_KEPT);
      if (explain) lines.push(`D (plan, ${rowLines.length > 0 ? 'some' : 'no'} rows)`);
      else lines.push(...kept);
      if (!explain && rowLines.length > ROWS_KEPT) {
        const hash = crypto.createHash('sha256');
        for (const l of rowLines) hash.update(`${l}\n`);
        lines.push(`D… ${rowLines.length - ROWS_KEPT} more rows, all rows sha256 ${hash.digest('hex')}`);
      }
      rowLines = [];
    };
    for (;;) {
      let f: Awaited<ReturnType<RawClient['next']>>;
      try {
        f = await this.raw.next(EXCHANGE_MS);
      } catch (e) {
        flushRows();
        lines.push(this.raw.closed ? 'closed' : `stuck: ${(e as Error).message}`);
        if (!this.raw.closed) this.raw.end();
        return { lines, masked, closed: true, ...(error ? { error } : {}) };
      }
      const p = f.payload;
      switch (f.code) {
        case BackendCode.RowDescription: {
          const fields = decodeRowDescription(p);
          formats = fields.map((x) => x.format);
          lines.push(`T ${this.norm(JSON.stringify(fields))}`);
          break;
        }
        case BackendCode.DataRow: {
          const cells = decodeDataRow(p).map((c, i) =>
            c === null ? null : formats[i] === 1 ? `\\x${c.toString('hex')}` : c.toString('utf8'),
          );
          if (cells.includes('*****')) masked = true;
          rowLines.push(`D ${this.norm(JSON.stringify(cells))}`);
          break;
        }
        case BackendCode.CommandComplete:
          flushRows();
          lines.push(`C ${decodeCommandComplete(p)}`);
          break;
        case BackendCode.ErrorResponse: {
          flushRows();
          const e = decodeErrorResponse(p);
          error ??= e;
          lines.push(errorLine('E', e, this.norm));
          break;
        }
        case BackendCode.NoticeResponse:
          lines.push(errorLine('N', decodeErrorResponse(p), this.norm));
          break;
        case BackendCode.ParameterStatus: {
          const s = decodeParameterStatus(p);
          lines.push(`S ${s.name}=${this.norm(s.value)}`);
          break;
        }
        case BackendCode.NotificationResponse: {
          // The sender's pid differs per connection; channel and payload are the answer.
          const n = decodeNotificationResponse(p);
          lines.push(`A ${this.norm(JSON.stringify({ channel: n.channel, payload: n.payload }))}`);
          break;
        }
        case BackendCode.CopyInResponse:
          lines.push('G copy in');
          this.raw.write(copyFail('noninterference harness sends no COPY data'));
          break;
        case BackendCode.CopyData:
          lines.push(`d ${this.norm(p.toString('utf8'))}`);
          break;
        case BackendCode.ReadyForQuery:
          flushRows();
          lines.push(`Z ${decodeReadyForQuery(p)}`);
          return { lines, masked, closed: false, ...(error ? { error } : {}) };
        default:
          flushRows();
          lines.push(`${String.fromCharCode(f.code)} ${p.toString('hex')}`);
      }
    }
  }
}
