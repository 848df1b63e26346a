// The Simple Query flow: a Query decided before it is sent, its replies matched to its statements' plans.
import { decodeCommandComplete } from '../wire/backend.js';
import { BackendCode } from '../wire/codes.js';
import type { Frame } from '../wire/framer.js';
import { decodeQuery } from '../wire/frontend.js';
import type { Expect } from './relay-core.js';
import { ResultRelay } from './relay-results.js';

/** Simple Query (protocol "Simple Query"): one Query message, possibly many statements, each with its plan. */
export abstract class SimpleQueryRelay extends ResultRelay {
  protected simpleQuery(f: Frame): Promise<void> | undefined {
    const { sql } = decodeQuery(f.payload);
    this.startBatch();
    const started = performance.now();
    return this.withGate(
      sql,
      (result) => {
        this.expects.push({ t: 'query', plans: result.plans, index: 0, sql, started });
        this.send(f.bytes);
        this.batchOpen = false;
      },
      (r) => this.refuseSimple(r),
    );
  }

  protected queryReply(head: Expect & { t: 'query' }, f: Frame): Buffer | null {
    const plan = head.plans[head.index] ?? null;
    switch (f.code) {
      case BackendCode.RowDescription:
        return this.rowDescription(plan, f);
      case BackendCode.DataRow:
        return this.dataRow(plan, f);
      case BackendCode.CommandComplete:
        this.completed(plan, head.sql, head.started, decodeCommandComplete(f.payload));
        head.index++;
        return f.bytes;
      default:
        return f.bytes;
    }
  }
}
