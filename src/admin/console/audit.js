// The audit log page: filters (identity, database, decision, table, time), a live tail, and each line opened as its verdict with lineage.
import { ApiError, api } from './api.js';
import { dataTable, explain, fill, h, showError, when } from './dom.js';
import { renderCheck } from './try.js';

const TAIL_MS = 2000;

/** The page. */
export async function auditPage(ctx) {
  const list = h('div', { class: 'scroll' });
  const detail = h('section', { 'aria-live': 'polite', 'aria-label': 'The line opened' });
  const status = h('p', { role: 'status', class: 'muted' });
  let entries = [];
  let timer;
  const form = h(
    'form',
    { 'aria-label': 'Filters' },
    h(
      'div',
      { class: 'row' },
      h('label', {}, 'Identity', h('input', { name: 'identity', 'data-path': 'query.identity' })),
      h('label', {}, 'Database', h('input', { name: 'database', 'data-path': 'query.database' })),
      h(
        'label',
        {},
        'Decision',
        h(
          'select',
          { name: 'decision', 'data-path': 'query.decision' },
          ['', 'allowed', 'masked', 'refused'].map((d) => h('option', { value: d }, d || 'any')),
        ),
      ),
      h('label', {}, 'Table', h('input', { name: 'table', 'data-path': 'query.table' })),
      h(
        'label',
        {},
        'Since',
        h('input', { name: 'since', type: 'datetime-local', 'data-path': 'query.since' }),
      ),
      h(
        'label',
        {},
        'Until',
        h('input', { name: 'until', type: 'datetime-local', 'data-path': 'query.until' }),
      ),
      h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'admin' }), 'Admin actions too'),
      h('button', { type: 'submit', class: 'primary' }, 'Filter'),
      h(
        'label',
        { class: 'inline' },
        h('input', { type: 'checkbox', name: 'tail', onchange: (e) => tail(e.target.checked) }),
        'Live tail',
      ),
    ),
  );

  function query(extra = {}) {
    const d = new FormData(form);
    const q = new URLSearchParams();
    for (const k of ['identity', 'database', 'decision', 'table']) if (d.get(k)) q.set(k, String(d.get(k)));
    for (const k of ['since', 'until']) if (d.get(k)) q.set(k, new Date(String(d.get(k))).toISOString());
    if (!d.get('admin')) q.set('admin', 'false');
    for (const [k, v] of Object.entries(extra)) q.set(k, v);
    q.set('limit', '200');
    return q.toString();
  }

  async function load() {
    try {
      const r = await api('GET', `/api/audit?${query()}`);
      entries = r.data.entries;
      fill(
        status,
        `${r.data.total} line${r.data.total === 1 ? '' : 's'}; newest first${r.data.total > entries.length ? `, the first ${entries.length} shown` : ''}.`,
      );
      render();
    } catch (err) {
      if (err instanceof ApiError) showError(form, err);
    }
  }

  async function poll() {
    if (!document.body.contains(list)) return tail(false);
    const newest = entries[0]?.time;
    try {
      const r = await api(
        'GET',
        `/api/audit?${query(newest ? { since: new Date(newest).toISOString() } : {})}`,
      );
      const seen = new Set(entries.map((e) => JSON.stringify(e)));
      const fresh = r.data.entries.filter((e) => !seen.has(JSON.stringify(e)));
      if (fresh.length) {
        entries = [...fresh, ...entries].slice(0, 500);
        fill(
          status,
          `Live: ${fresh.length} new line${fresh.length === 1 ? '' : 's'} at ${new Date().toLocaleTimeString()}.`,
        );
        render();
      }
    } catch {
      // the next poll tries again; a 401 shows the login
    }
  }

  function tail(on) {
    clearInterval(timer);
    timer = on ? setInterval(() => void poll(), TAIL_MS) : undefined;
    if (on) fill(status, 'Live tail on: new lines appear at the top.');
  }

  function render() {
    fill(
      list,
      dataTable(
        [
          'Time',
          'Identity',
          h('th', { scope: 'col', class: 'hide-narrow' }, 'Database'),
          'Decision',
          'Statement',
          '',
        ],
        entries.map((e) =>
          h(
            'tr',
            { 'data-decision': e.decision ?? '' },
            h('td', {}, when(e.time)),
            h('td', {}, e.identity ?? ''),
            h('td', { class: 'hide-narrow' }, e.database ?? ''),
            h('td', {}, e.admin ? `admin ${e.status}` : (e.decision ?? '')),
            h(
              'td',
              {},
              h('code', {}, e.admin ? `${e.method} ${e.route}` : String(e.sql ?? '').slice(0, 160)),
            ),
            h('td', {}, h('button', { type: 'button', onclick: () => open(e) }, 'Open')),
          ),
        ),
        { 'aria-label': 'Audit lines' },
      ),
    );
  }

  async function open(e) {
    fill(
      detail,
      h('h2', {}, 'Audit line'),
      h(
        'dl',
        {},
        Object.entries(e)
          .filter(([k]) => k !== 'audit')
          .map(([k, v]) => [
            h('dt', {}, k),
            h('dd', {}, h('code', {}, typeof v === 'string' ? v : JSON.stringify(v))),
          ]),
      ),
    );
    if (e.admin || typeof e.sql !== 'string') return;
    if (!ctx.holds('workspace_roles')) {
      detail.append(
        h('p', { class: 'box warn' }, 'The verdict with lineage needs workspace_roles (it runs a check).'),
      );
      return;
    }
    try {
      const c = await api('POST', '/api/check', {
        body: { user: e.viewer ?? e.identity, database: e.database, sql: e.sql },
      });
      detail.append(
        h('p', { class: 'muted' }, 'The statement decided again under the policy in force now:'),
        renderCheck(c.data),
      );
    } catch (err) {
      if (err instanceof ApiError) detail.append(h('div', { class: 'box bad' }, ...explain(err)));
    }
    detail.scrollIntoView?.({ block: 'nearest' });
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void load();
  });
  fill(ctx.main, h('h1', {}, 'Audit log'), form, status, list, detail);
  await load();
}
