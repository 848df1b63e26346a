// "Try a statement": a user (or a role), a database and SQL; the verdict, each result column's lineage and mask, each requirement with its rule.
import { ApiError, api } from './api.js';
import { fill, h, showError } from './dom.js';

/** The answer of POST /api/check for people: verdict, refusal, columns with lineage, requirements with rules. */
export function renderCheck(c) {
  return h(
    'section',
    { 'aria-label': 'Verdict', class: 'verdict' },
    h('h2', {}, `Verdict: ${c.verdict}`),
    h(
      'p',
      { class: 'muted' },
      `user ${c.user} · roles ${c.roles.join(', ') || '(none)'} · database ${c.database} · ${c.connection}`,
    ),
    c.refusedAtConnect && c.refusal
      ? h('p', { class: 'box bad' }, `Refused at connect: ${c.refusal.sqlstate} ${c.refusal.message}`)
      : '',
    c.statements.map((s, i) =>
      h(
        'article',
        { class: 'box' },
        h('h3', {}, `Statement ${i + 1}: `, h('code', {}, s.sql)),
        h('p', {}, h('strong', {}, s.verdict)),
        s.refusal
          ? h(
              'div',
              { class: 'box bad' },
              h('p', {}, `${s.refusal.sqlstate}: ${s.refusal.message}`),
              s.refusal.detail ? h('p', {}, `DETAIL: ${s.refusal.detail}`) : '',
              s.refusal.hint ? h('p', {}, `HINT: ${s.refusal.hint}`) : '',
            )
          : '',
        s.columns.length
          ? h(
              'div',
              { class: 'scroll' },
              h(
                'table',
                { 'aria-label': `Result columns of statement ${i + 1}` },
                h(
                  'thead',
                  {},
                  h(
                    'tr',
                    {},
                    ['#', 'Column', 'Lineage', 'Shown'].map((t) => h('th', { scope: 'col' }, t)),
                  ),
                ),
                h(
                  'tbody',
                  {},
                  s.columns.map((col, k) =>
                    h(
                      'tr',
                      {},
                      h('td', {}, String(k + 1)),
                      h('th', { scope: 'row' }, col.name),
                      h('td', {}, col.lineage ? col.lineage.join(' | ') : '(expression)'),
                      h('td', {}, s.verdict === 'refused' ? '—' : col.masked ? 'masked' : 'yes'),
                    ),
                  ),
                ),
              ),
            )
          : '',
        s.checks.length
          ? h(
              'div',
              { class: 'scroll' },
              h(
                'table',
                { 'aria-label': `Requirements of statement ${i + 1}` },
                h(
                  'thead',
                  {},
                  h(
                    'tr',
                    {},
                    ['Requirement', 'Object', 'Verdict', 'Rule'].map((t) => h('th', { scope: 'col' }, t)),
                  ),
                ),
                h(
                  'tbody',
                  {},
                  s.checks.map((x) =>
                    h(
                      'tr',
                      {},
                      h('td', {}, x.action),
                      h('td', {}, h('code', {}, x.object)),
                      h(
                        'td',
                        {},
                        x.action === 'SEE'
                          ? x.granted
                            ? 'seen'
                            : 'hidden'
                          : x.granted
                            ? 'granted'
                            : 'refused',
                      ),
                      h('td', {}, x.carries ? `carries ${x.carries}` : x.ruleText),
                    ),
                  ),
                ),
              ),
            )
          : '',
      ),
    ),
  );
}

/** The page: pick a user or a role and a database, type SQL, see the verdict. */
export async function tryPage(ctx) {
  const databases = (await api('GET', '/api/catalog')).data.databases;
  const users = ctx.holds('workspace_users')
    ? Object.keys((await api('GET', '/api/users')).data.users)
    : null;
  const roles = Object.keys((await api('GET', '/api/roles')).data.roles);
  const out = h('div', {});
  const form = h(
    'form',
    { 'aria-labelledby': 'try-title' },
    h(
      'div',
      { class: 'row' },
      users
        ? h(
            'label',
            {},
            'User',
            h(
              'select',
              { name: 'user', 'data-path': 'body.user' },
              users.map((u) => h('option', { value: u }, u)),
            ),
          )
        : h('label', {}, 'User', h('input', { name: 'user', required: true, 'data-path': 'body.user' })),
      h(
        'label',
        {},
        'Role (optional: the one role the connection names)',
        h(
          'select',
          { name: 'role', 'data-path': 'body.role' },
          h('option', { value: '' }, "(the user's roles)"),
          roles.map((x) => h('option', { value: x }, x)),
        ),
      ),
      h(
        'label',
        {},
        'Database',
        h(
          'select',
          { name: 'database', 'data-path': 'body.database' },
          databases.map((d) => h('option', { value: d }, d)),
        ),
      ),
    ),
    h(
      'label',
      { class: 'wide' },
      'SQL',
      h('textarea', { name: 'sql', rows: 5, required: true, 'data-path': 'body.sql' }, 'select * from users'),
    ),
    h('button', { type: 'submit', class: 'primary' }, 'Check'),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const d = new FormData(form);
    const body = {
      user: String(d.get('user') ?? ''),
      sql: String(d.get('sql') ?? ''),
      database: String(d.get('database') ?? ''),
    };
    if (d.get('role')) body.role = String(d.get('role'));
    fill(out, h('p', {}, 'Checking…'));
    try {
      fill(out, renderCheck((await api('POST', '/api/check', { body })).data));
    } catch (err) {
      fill(out);
      if (err instanceof ApiError) showError(form, err);
    }
  });
  fill(
    ctx.main,
    h('h1', { id: 'try-title' }, 'Try a statement'),
    h('p', { class: 'muted' }, 'Nothing is run: the statement is analyzed and decided as the proxy would.'),
    form,
    out,
  );
}
