// A principal's stored verifiers as one SCRAM exchange needs them: one salt and iteration count, one or more key pairs.
import { parseScramVerifier, type ScramVerifier } from '../auth/scram-verifier.js';
import type { Principal } from './principals.js';

/**
 * What the proxy's SCRAM exchange needs to accept any token valid now: `primary` (its salt and
 * iteration count go into the server-first-message) and `alternates`, further verifiers with the
 * SAME salt and iteration count whose proofs are also accepted (a rotated API key's previous token,
 * valid for 24 hours, issue 4).
 */
export interface LoginVerifiers {
  readonly primary: ScramVerifier;
  readonly alternates: readonly ScramVerifier[];
}

/**
 * Turns `principal.verifiers` (stored strings, current token first) into {@link LoginVerifiers}.
 * Output: null when the principal has no parsable stored verifier (a demo user with a plain
 * password: derive one as the proxy's VerifierCache does). A further verifier whose salt or
 * iteration count differs from the primary's cannot be checked in the same exchange and is left out
 * (`pgwarden keys rotate` always reuses them). Source: issue 4 "rotation keeps the old token valid for
 * 24 hours"; RFC 5802 §5 (the salt and iteration count are sent before the proof). Never throws.
 */
export function loginVerifiers(principal: Principal): LoginVerifiers | null {
  const parsed = principal.verifiers.map(parseScramVerifier).filter((v): v is ScramVerifier => v !== null);
  const primary = parsed[0];
  if (!primary) return null;
  const alternates = parsed
    .slice(1)
    .filter((v) => v.iterations === primary.iterations && v.salt.equals(primary.salt));
  return { primary, alternates };
}
