// The policy version: a number that changes whenever a new configuration is loaded, for decision cache keys.
import type { Config } from './config-schema.js';

const versions = new WeakMap<Config, number>();
let next = 1;

/**
 * The version of a loaded policy. Input: a validated Config object. Output: a positive integer,
 * the same for the same object, higher for every object seen later — a reload (which builds a new
 * Config) therefore bumps it, and decisions cached under the old version are never served again.
 * Source: issue 4, "Decisions are cached per (analysis, role set, policy version); a reload bumps
 * the version". Never throws.
 */
export function policyVersion(config: Config): number {
  let v = versions.get(config);
  if (v === undefined) {
    v = next++;
    versions.set(config, v);
  }
  return v;
}
