// The console's shell: session, login and logout, the pages each app-level action opens, hash routing.
import { ApiError, api, setCsrf, whenExpired } from './api.js';
import { auditPage } from './audit.js';
import { explain, fill, h, showError } from './dom.js';
import { keysPage } from './keys.js';
import { groupsPage, usersPage } from './people.js';
import { rolePage, rolesPage } from './roles.js';
import { tryPage } from './try.js';

/** The pages: hash, title, the app-level action they need. */
const PAGES = [
  { path: 'roles', title: 'Roles', action: 'workspace_roles' },
  { path: 'users', title: 'Users', action: 'workspace_users' },
  { path: 'groups', title: 'Groups', action: 'workspace_groups' },
  { path: 'keys', title: 'API keys', action: 'workspace_api_keys' },
  { path: 'audit', title: 'Audit log', action: 'audit_read' },
  { path: 'try', title: 'Try a statement', action: 'workspace_roles' },
];

const main = document.getElementById('main');
const state = { session: null, loginMessage: '' };

function notice(text) {
  fill(document.getElementById('notice'), text ?? '');
}

/** The session of the console: who, roles, actions held. */
export function session() {
  return state.session;
}

/** True when the caller holds app-level `action`. */
export function holds(action) {
  return Boolean(state.session?.actions?.includes(action));
}

function renderChrome() {
  const s = state.session;
  const here = location.hash.replace(/^#\/?/, '').split('/')[0] || '';
  fill(
    document.getElementById('nav'),
    s
      ? h(
          'ul',
          {},
          h('li', {}, h('a', { href: '#/', 'aria-current': here === '' ? 'page' : null }, 'Home')),
          PAGES.filter((p) => holds(p.action) || p.path === 'roles').map((p) =>
            h(
              'li',
              {},
              h('a', { href: `#/${p.path}`, 'aria-current': here === p.path ? 'page' : null }, p.title),
            ),
          ),
        )
      : '',
  );
  fill(
    document.getElementById('who'),
    s
      ? [
          h(
            'span',
            {},
            `${s.user} · ${s.roles.join(', ') || 'no role'}${s.workspace_admin ? ' · workspace admin' : ''}`,
          ),
          h('button', { type: 'button', onclick: logout }, 'Log out'),
        ]
      : '',
  );
}

async function logout() {
  try {
    await api('POST', '/api/logout');
  } catch {
    // the session may be gone already
  }
  state.session = null;
  setCsrf('');
  notice('You are logged out.');
  location.hash = '#/login';
}

/** The reason a page is absent, for a caller without its action. */
function missing(page) {
  return h(
    'div',
    { class: 'box warn', role: 'note' },
    h('h1', {}, page.title),
    h(
      'p',
      {},
      `${page.title} needs the app-level action `,
      h('code', {}, page.action),
      `, which your roles (${state.session.roles.join(', ') || 'none'}) do not hold. `,
      page.path === 'roles' ? 'The permission grid is not shown to you. ' : '',
      'A workspace admin can grant it.',
    ),
  );
}

function home() {
  const s = state.session;
  const held = PAGES.filter((p) => holds(p.action));
  fill(
    main,
    h('h1', {}, `Welcome, ${s.user}`),
    h(
      'p',
      {},
      'Your app-level actions: ',
      s.actions.length ? s.actions.map((a) => h('code', { class: 'pill' }, a)) : 'none.',
    ),
    held.length
      ? h(
          'ul',
          {},
          held.map((p) => h('li', {}, h('a', { href: `#/${p.path}` }, p.title))),
        )
      : h(
          'p',
          { class: 'box warn' },
          'You hold no app-level action, so there is nothing to administer here. The permission grid needs workspace_roles.',
        ),
  );
}

function loginPage(message) {
  const form = h(
    'form',
    { 'aria-labelledby': 'login-title', novalidate: true },
    h('h1', { id: 'login-title' }, 'Log in to pgwarden'),
    message ? h('p', { class: 'box warn', role: 'status' }, message) : '',
    h(
      'label',
      {},
      'User',
      h('input', { name: 'user', autocomplete: 'username', required: true, 'data-path': 'body.user' }),
    ),
    h(
      'label',
      {},
      'Password',
      h('input', {
        name: 'password',
        type: 'password',
        autocomplete: 'current-password',
        required: true,
        'data-path': 'body.password',
      }),
    ),
    h('div', {}, h('button', { type: 'submit', class: 'primary' }, 'Log in')),
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const data = new FormData(form);
    try {
      const r = await api('POST', '/api/login', {
        body: { user: data.get('user'), password: data.get('password') },
      });
      setCsrf(r.data.csrf_token);
      await loadSession();
      state.loginMessage = '';
      notice('');
      const back = sessionStorage.getItem('pgwarden.return');
      sessionStorage.removeItem('pgwarden.return');
      const next = back && back !== '#/login' ? back : '#/';
      if (location.hash === next) await route();
      else location.hash = next;
    } catch (err) {
      if (err instanceof ApiError) showError(form, err);
      else throw err;
    }
  });
  fill(main, form);
  form.querySelector('input')?.focus();
}

async function loadSession() {
  const r = await api('GET', '/api/session');
  state.session = r.data;
  if (r.data.csrf_token) setCsrf(r.data.csrf_token);
  renderChrome();
}

whenExpired(() => {
  if (!state.session) return;
  state.session = null;
  if (location.hash !== '#/login') sessionStorage.setItem('pgwarden.return', location.hash || '#/');
  state.loginMessage = 'Your session has ended. Log in again: the edit in progress is kept.';
  renderChrome();
  if (location.hash === '#/login') loginPage(state.loginMessage);
  else location.hash = '#/login';
});

/** How many times route() has run: a page whose data came back after a later route ran is stale. */
let routes = 0;

/** Renders the page the hash names. */
export async function route() {
  const generation = ++routes;
  const current = () => generation === routes;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const [name, arg] = parts;
  if (!state.session) {
    if (name !== 'login') sessionStorage.setItem('pgwarden.return', location.hash || '#/');
    renderChrome();
    return loginPage(state.loginMessage);
  }
  renderChrome();
  if (name === 'login' || name === '') return home();
  const page = PAGES.find((p) => p.path === name);
  if (!page) return fill(main, h('h1', {}, 'Not found'), h('p', {}, h('a', { href: '#/' }, 'Home')));
  if (!holds(page.action)) return fill(main, missing(page));
  // A page fills ctx.main after its API calls return. If the user has gone to another page by
  // then, its late answer must not replace that page: it fills a detached element instead.
  const ctx = {
    get main() {
      return current() ? main : document.createElement('main');
    },
    session: state.session,
    holds,
    notice,
    route,
  };
  try {
    if (name === 'roles' && arg !== undefined) await rolePage(ctx, arg);
    else if (name === 'roles') await rolesPage(ctx);
    else if (name === 'users') await usersPage(ctx);
    else if (name === 'groups') await groupsPage(ctx);
    else if (name === 'keys') await keysPage(ctx);
    else if (name === 'audit') await auditPage(ctx);
    else if (name === 'try') await tryPage(ctx);
  } catch (err) {
    if ((err instanceof ApiError && err.status === 401) || !current()) return;
    fill(main, h('h1', {}, page.title), h('div', { class: 'box bad', role: 'alert' }, ...explain(err)));
  }
  if (current()) main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', () => void route());
try {
  await loadSession();
} catch {
  state.session = null;
}
await route();
