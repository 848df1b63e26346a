// `pgwarden policy export|import|history`: the options handed to src/policy/policy-command.ts, its outcome printed.
import { finish } from './command-outcome.js';

/** `pgwarden policy export`: the store's policy as YAML on stdout or in `opts.output` (mode 0600); policyExport's exit code. */
export async function policyExportAction(opts: { config: string; output?: string }): Promise<void> {
  const { policyExport } = await import('../policy/policy-command.js');
  finish(await policyExport(opts));
}

/** `pgwarden policy import <file>`: the YAML `file` replaces the store's policy; policyImport's exit code. */
export async function policyImportAction(
  file: string,
  opts: { config: string; summary?: string },
): Promise<void> {
  const { policyImport } = await import('../policy/policy-command.js');
  finish(await policyImport({ ...opts, file }));
}

/** `pgwarden policy history`: the newest `opts.limit` versions (a count as typed); policyHistory's exit code. */
export async function policyHistoryAction(opts: { config: string; limit: string }): Promise<void> {
  const { policyHistory } = await import('../policy/policy-command.js');
  finish(await policyHistory({ config: opts.config, limit: Number(opts.limit) }));
}
