// The dry run before saving a role: the recent statements whose verdict the change alters, per user, each one openable.
import { h } from './dom.js';

function verdictText(v) {
  if (!v) return '';
  if (v.decision === 'masked') return `allowed, with ${v.masked?.join(', ')} masked`;
  if (v.decision === 'refused') return `refused${v.reason ? `: ${v.reason}` : ''}`;
  return 'allowed';
}

/** The nodes showing a POST /api/replay answer: a heading, the count, and the changes grouped by user. */
export function dryRunReport(rep) {
  const changes = rep.changes;
  const byUser = new Map();
  for (const c of changes) byUser.set(c.identity, [...(byUser.get(c.identity) ?? []), c]);
  const change = (c) =>
    h(
      'li',
      { 'data-change': c.change },
      h(
        'details',
        {},
        h('summary', {}, h('code', {}, c.sql), ` — ${c.change.replace('→', ' → ')}`),
        h(
          'dl',
          {},
          h('dt', {}, 'Database'),
          h('dd', {}, c.database),
          h('dt', {}, 'Now'),
          h('dd', {}, verdictText(c.before)),
          h('dt', {}, 'After saving'),
          h('dd', {}, verdictText(c.after)),
          h('dt', {}, 'Times in the log'),
          h('dd', {}, String(c.occurrences)),
        ),
      ),
    );
  return [
    h(
      'h2',
      { id: 'dry-title' },
      `Dry run: ${changes.length} statement${changes.length === 1 ? '' : 's'} would change`,
    ),
    h(
      'p',
      { class: 'muted' },
      `${rep.statements} distinct statements of the audit log decided again (${rep.lines} lines).`,
    ),
    changes.length === 0 ? h('p', {}, 'No recent statement changes its verdict.') : '',
    h(
      'ul',
      { class: 'changes', 'aria-label': 'Statements whose verdict changes, per user' },
      [...byUser].map(([who, list]) =>
        h(
          'li',
          {},
          h(
            'details',
            { open: true },
            h(
              'summary',
              {},
              h('strong', {}, who),
              `: ${list.length} statement${list.length === 1 ? '' : 's'}`,
            ),
            h('ul', {}, list.map(change)),
          ),
        ),
      ),
    ),
  ];
}
