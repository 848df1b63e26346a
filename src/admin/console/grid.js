// The permission grid of a role (seed 004): app-level rows, then databases expandable into schemas, tables and columns; allow / deny / inherit per cell; the effective result and its rule.
import { api } from './api.js';
import { fill, h } from './dom.js';

/** The six actions (the grid's columns) and the app-level actions (its rows on top), as GET /api/catalog gives them. */
let ACTIONS = [];
let APP_ACTIONS = [];

/** Sets the actions the grid shows, from GET /api/catalog's `actions` and `app_actions`. */
export function useActions(catalog) {
  ACTIONS = catalog.actions;
  APP_ACTIONS = catalog.app_actions;
}
const LEVELS = ['database', 'schema', 'table', 'column'];

/** A scope's name as written in rules: `demo.public.orgs.name`, `*`; the app-level scope is ``. */
export function scopeName(s) {
  return LEVELS.map((l) => s[l])
    .filter((x) => x !== undefined)
    .join('.');
}

function sameScope(p, s) {
  return LEVELS.every((l) => p[l] === s[l]);
}

/** A cell's own state: `deny` or `allow` when a rule of exactly this scope names the action, else `inherit`. */
export function cellState(perms, scope, action) {
  const here = perms.filter((p) => sameScope(p, scope) && p.actions.includes(action));
  if (here.some((p) => p.effect === 'deny')) return 'deny';
  if (here.some((p) => p.effect === 'allow')) return 'allow';
  return 'inherit';
}

/**
 * The rules with one cell set: `action` leaves every rule of exactly `scope` (rules left with no
 * action go), then, unless `state` is `inherit`, joins a rule of that effect and scope (made when none).
 */
export function setCell(perms, scope, action, state) {
  const out = perms
    .map((p) =>
      sameScope(p, scope) && p.actions.includes(action)
        ? { ...p, actions: p.actions.filter((a) => a !== action) }
        : p,
    )
    .filter((p) => p.actions.length > 0);
  if (state === 'inherit') return out;
  // App-level rules have no database (config-schema.ts), so a rule of the same scope never mixes the two kinds.
  const i = out.findIndex((p) => sameScope(p, scope) && p.effect === state);
  if (i >= 0) out[i] = { ...out[i], actions: [...out[i].actions, action] };
  else {
    const rule = { effect: state, actions: [action] };
    for (const l of LEVELS) if (scope[l] !== undefined) rule[l] = scope[l];
    out.push(rule);
  }
  return out;
}

function label(scope) {
  const level = LEVELS.filter((l) => scope[l] !== undefined).at(-1);
  const last = scope[level];
  return last === '*' ? `* (every ${level})` : last;
}

/** What a verdict reads as in a cell. */
function verdictWord(action, v) {
  if (!v) return '';
  if (APP_ACTIONS.includes(action)) return v.granted ? 'held' : 'not held';
  if (action === 'SEE') return v.granted ? 'seen' : 'masked';
  return v.granted ? 'allowed' : 'refused';
}

/**
 * Makes the grid of role `role`. `opts.permissions()` gives the drafted rules, `opts.onCell(scope,
 * action, state)` records an edit, `opts.readOnly` disables every cell (with `opts.reason`).
 * Output: `{ el, refresh }`; refresh re-reads the draft and asks the API for the effective results.
 */
export function makeGrid(role, databases, opts) {
  const catalogs = new Map();
  const expanded = new Set();
  let selected = null;
  let effective = { app: {}, rows: [] };
  let visible = [];
  const table = h('table', { class: 'grid', 'aria-label': `Permission grid of role ${role}` });
  const panel = h('aside', { class: 'panel box', 'aria-live': 'polite', 'aria-label': 'Effective result' });
  const el = h('div', { class: 'layout' }, h('div', { class: 'scroll' }, table), panel);

  const key = (s) => JSON.stringify(LEVELS.map((l) => s[l] ?? null));

  // Expand every node above a rule of the role, so that its rules show at once.
  for (const p of opts.permissions()) {
    if (!p.database || p.database === '*') continue;
    const s = { database: p.database };
    for (const l of ['schema', 'table']) {
      if (p[l] === undefined || p[l] === '*') break;
      expanded.add(key(s));
      s[l] = p[l];
    }
    if (p.column !== undefined) expanded.add(key(s));
  }

  async function catalog(db) {
    if (!catalogs.has(db))
      catalogs.set(
        db,
        api('GET', `/api/catalog/${encodeURIComponent(db)}`).then(
          (r) => r.data,
          (e) => ({ error: e }),
        ),
      );
    return catalogs.get(db);
  }

  /** The children of a node: the catalog's names and those rules name, then `*`. */
  async function children(scope) {
    const level = LEVELS[LEVELS.filter((l) => scope[l] !== undefined).length];
    const cat = await catalog(scope.database);
    const names = new Set();
    if (!cat.error) {
      const schema = cat.schemas.find((x) => x.name === scope.schema);
      const tbl = schema?.tables.find((t) => t.name === scope.table);
      if (level === 'schema') for (const x of cat.schemas) names.add(x.name);
      if (level === 'table') for (const t of schema?.tables ?? []) names.add(t.name);
      if (level === 'column') for (const c of tbl?.columns ?? []) names.add(c.name);
    }
    for (const p of opts.permissions())
      if (
        LEVELS.slice(0, LEVELS.indexOf(level)).every((l) => p[l] === scope[l]) &&
        p[level] !== undefined &&
        p[level] !== '*'
      )
        names.add(p[level]);
    return { error: cat.error, scopes: [...names, '*'].map((n) => ({ ...scope, [level]: n })) };
  }

  async function rows() {
    const out = [];
    const walk = async (scope, depth) => {
      const level = LEVELS.filter((l) => scope[l] !== undefined).length;
      const canOpen = level < 4 && scope[LEVELS[level - 1]] !== '*';
      out.push({ scope, depth, canOpen });
      if (canOpen && expanded.has(key(scope))) {
        const c = await children(scope);
        if (c.error) out.push({ error: c.error, depth: depth + 1 });
        for (const s of c.scopes) await walk(s, depth + 1);
      }
    };
    for (const db of [...databases, '*']) await walk({ database: db }, 0);
    return out;
  }

  function select(action, scope, state, name) {
    const s = h(
      'select',
      { 'aria-label': name, disabled: opts.readOnly, onfocus: () => pick(scope) },
      ['inherit', 'allow', 'deny'].map((v) => h('option', { value: v, selected: v === state }, v)),
    );
    s.addEventListener('change', () => {
      opts.onCell(scope, action, s.value);
      pick(scope);
      void loadEffective();
    });
    return s;
  }

  function pick(scope) {
    selected = scope;
    const k = scope === 'app' || (scope && Object.keys(scope).length === 0) ? 'app' : scope ? key(scope) : '';
    if (k === 'app') selected = 'app';
    for (const tr of table.querySelectorAll('tr[data-key]'))
      tr.classList.toggle('selected', tr.dataset.key === k);
    renderPanel();
  }

  function renderPanel() {
    if (!selected) {
      fill(
        panel,
        h('h2', {}, 'Effective result'),
        h(
          'p',
          { class: 'muted' },
          'Pick a row or a cell to see what the decision would be for this role, and which rule decides it.',
        ),
      );
      return;
    }
    if (selected === 'app') {
      fill(
        panel,
        h('h2', {}, 'App-level actions'),
        h(
          'dl',
          {},
          APP_ACTIONS.map((a) => [
            h('dt', {}, h('code', {}, a), ': ', verdictWord(a, effective.app[a])),
            h('dd', {}, effective.app[a]?.text ?? '…'),
          ]),
        ),
      );
      return;
    }
    const row = effective.rows.find((r) => key(r.scope) === key(selected));
    fill(
      panel,
      h('h2', {}, 'Effective on ', h('code', {}, scopeName(selected))),
      h('p', { class: 'muted' }, `For someone holding only role ${role}, with the changes not yet saved.`),
      h(
        'dl',
        {},
        ACTIONS.map((a) => {
          const v = row?.cells[a];
          return [
            h('dt', {}, h('strong', {}, a), ': ', v === null ? 'not offered' : verdictWord(a, v) || '…'),
            h(
              'dd',
              {},
              v === null
                ? 'MANAGE is granted on a database only; a rule below it never matches.'
                : (v?.text ?? ''),
            ),
          ];
        }),
      ),
    );
  }

  async function render() {
    const perms = opts.permissions();
    const list = await rows();
    visible = list.filter((r) => r.scope).map((r) => r.scope);
    const head = h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col', class: 'scope' }, 'Scope'),
        ACTIONS.map((a) => h('th', { scope: 'col' }, a)),
      ),
    );
    const app = [
      h(
        'tr',
        { class: 'section' },
        h('th', { colspan: 7, scope: 'colgroup' }, 'Workspace (app-level actions)'),
      ),
      APP_ACTIONS.map((a) =>
        h(
          'tr',
          { 'data-key': 'app', 'data-action': a },
          h(
            'th',
            { scope: 'row' },
            h('button', { type: 'button', class: 'linkish', onclick: () => pick('app') }, a),
          ),
          h(
            'td',
            { colspan: 6 },
            select(a, {}, cellState(perms, {}, a), `${a} (app-level)`),
            h('span', { class: 'eff', 'data-eff': a }),
          ),
        ),
      ),
      h('tr', { class: 'section' }, h('th', { colspan: 7, scope: 'colgroup' }, 'Databases')),
    ];
    const body = list.map((r) => {
      if (r.error)
        return h(
          'tr',
          {},
          h(
            'td',
            { colspan: 7, class: `error depth-${r.depth}` },
            `Catalog not available: ${r.error.body?.message ?? r.error.message}`,
          ),
        );
      const { scope } = r;
      const name = scopeName(scope);
      const open = expanded.has(key(scope));
      return h(
        'tr',
        { 'data-key': key(scope), 'data-scope': name },
        h(
          'th',
          { scope: 'row', class: `scope depth-${r.depth}` },
          r.canOpen
            ? h(
                'button',
                {
                  type: 'button',
                  class: 'tree-toggle',
                  'aria-expanded': String(open),
                  'aria-label': `${open ? 'Collapse' : 'Expand'} ${name}`,
                  onclick: async () => {
                    if (open) expanded.delete(key(scope));
                    else expanded.add(key(scope));
                    await refresh();
                    table.querySelector(`tr[data-scope="${CSS.escape(name)}"] .tree-toggle`)?.focus();
                  },
                },
                open ? '▾' : '▸',
              )
            : h('span', { class: 'tree-toggle', 'aria-hidden': 'true' }, ' '),
          h(
            'button',
            {
              type: 'button',
              class: 'linkish',
              onclick: () => pick(scope),
              'aria-label': `Show the effective result on ${name}`,
            },
            label(scope),
          ),
        ),
        ACTIONS.map((a) =>
          a === 'MANAGE' && scope.schema !== undefined
            ? h(
                'td',
                { title: 'MANAGE is granted on a database only' },
                h('span', { class: 'muted', 'aria-label': 'MANAGE is granted on a database only' }, '—'),
              )
            : h(
                'td',
                {},
                select(a, scope, cellState(perms, scope, a), `${a} on ${name}`),
                h('span', { class: 'eff', 'data-eff': a }),
              ),
        ),
      );
    });
    fill(table, head, h('tbody', {}, app, body));
    if (opts.readOnly) table.setAttribute('aria-describedby', 'grid-reason');
  }

  async function loadEffective() {
    const r = await api('POST', `/api/roles/${encodeURIComponent(role)}/effective`, {
      body: { permissions: opts.permissions(), scopes: visible },
    });
    effective = r.data;
    for (const tr of table.querySelectorAll('tr[data-key="app"]')) {
      const a = tr.dataset.action;
      paint(tr.querySelector('[data-eff]'), a, effective.app[a]);
    }
    const byKey = new Map(effective.rows.map((x) => [key(x.scope), x]));
    for (const tr of table.querySelectorAll('tr[data-scope]')) {
      const row = byKey.get(tr.dataset.key);
      for (const span of tr.querySelectorAll('[data-eff]'))
        paint(span, span.dataset.eff, row?.cells[span.dataset.eff]);
    }
    renderPanel();
  }

  function paint(span, action, v) {
    if (!span) return;
    span.textContent = verdictWord(action, v);
    span.className = `eff ${v?.granted ? 'yes' : 'no'}`;
    span.title = v?.text ?? '';
  }

  async function refresh() {
    await render();
    if (selected && selected !== 'app') pick(selected);
    await loadEffective();
  }

  renderPanel();
  return { el, refresh, effectiveNow: () => effective };
}
