// What a session still running at shutdown (or KILL) does before its FATAL 57P01: cancel, terminate, roll back, and say so.
import { ClientError } from './client-error.js';
import type { Relay } from './relay.js';

/** PostgreSQL's message for FATAL 57P01 admin_shutdown. */
export const ADMIN_SHUTDOWN = 'terminating connection due to administrator command';
/** How long the ROLLBACK of a session idle in a transaction may take at shutdown (ms). */
export const SHUTDOWN_ROLLBACK_MS = 5000;

/** How a session reaches its upstream backend from outside its connection. */
export interface UpstreamControl {
  /** Sends the upstream a CancelRequest for the running statement. */
  cancel(): Promise<void>;
  /** pg_terminate_backend of the upstream backend; true when it was terminated. */
  terminate(): Promise<boolean>;
}

/**
 * Brings a session's upstream to an end at shutdown (issue 16 item 1): a statement still running
 * gets an upstream CancelRequest and `cancelWaitMs` to answer (its ErrorResponse or completion is
 * relayed as usual), else `terminateUpstream` ends its backend; an open transaction is rolled back
 * upstream (or its backend terminated when the ROLLBACK does not answer in `cancelWaitMs`).
 * `closed` tells whether the session closed meanwhile. Pushes onto `facts` the sentences the FATAL
 * 57P01's DETAIL gives, in order (none when there was nothing to end); those pushed before a
 * rejection (only where the relay rejects) stay.
 */
export async function endUpstreamWork(
  relay: Relay,
  control: UpstreamControl | undefined,
  cancelWaitMs: number,
  terminateUpstream: () => Promise<boolean>,
  closed: () => boolean,
  facts: string[],
): Promise<void> {
  let killed = false;
  if (relay.busy) {
    relay.forgetLastError();
    await control?.cancel();
    if (await relay.idle(cancelWaitMs)) {
      const code = relay.lastErrorCode;
      facts.push(
        code === undefined
          ? 'The statement running at shutdown completed.'
          : code === '57014'
            ? 'The statement running at shutdown was canceled and had no effect.'
            : `The statement running at shutdown failed (SQLSTATE ${code}) and had no effect.`,
      );
    } else {
      killed = await terminateUpstream();
      facts.push(
        killed
          ? 'The statement running at shutdown did not answer a cancel request; its upstream session was terminated, so it had no effect.'
          : 'The statement running at shutdown did not answer a cancel request and its upstream session could not be terminated: its outcome is unknown.',
      );
    }
  }
  if (!killed && !closed() && relay.transactionStatus !== 'I') {
    const rolledBack = await relay.runInternal('ROLLBACK', cancelWaitMs);
    if (rolledBack) facts.push('The open transaction was rolled back.');
    else {
      killed = await terminateUpstream();
      facts.push(
        killed
          ? 'The open transaction was rolled back (its upstream session was terminated).'
          : 'The open transaction could not be rolled back: its upstream session was closed, which aborts it.',
      );
    }
  } else if (killed) facts.push('Any open transaction was rolled back with it.');
}

/** FATAL 57P01 admin_shutdown, its DETAIL the `facts` {@link endUpstreamWork} gave (none: no DETAIL). */
export function shutdownFatal(facts: readonly string[]): ClientError {
  return new ClientError({
    severity: 'FATAL',
    code: '57P01',
    message: ADMIN_SHUTDOWN,
    ...(facts.length > 0 ? { detail: facts.join(' ') } : {}),
  });
}
