// The API keys page: create (the token shown once, with a copy button), rotate (the previous token valid 24 h), revoke, expiry.
import { ApiError, api } from './api.js';
import { dataTable, fill, h, showError, when } from './dom.js';

function tokenBox(token, what) {
  const input = h('input', { class: 'token', readonly: true, value: token, 'aria-label': 'New token' });
  const copied = h('span', { role: 'status' });
  return h(
    'div',
    { class: 'box warn', role: 'alert', 'data-token': 'shown' },
    h('h2', {}, what),
    h(
      'p',
      {},
      h('strong', {}, 'Copy this token now: it is shown only once.'),
      ' pgwarden keeps only its verifier and cannot show it again.',
    ),
    input,
    h(
      'div',
      { class: 'row' },
      h(
        'button',
        {
          type: 'button',
          onclick: async () => {
            try {
              await navigator.clipboard.writeText(token);
            } catch {
              input.select();
              document.execCommand?.('copy');
            }
            fill(copied, 'Copied.');
          },
        },
        'Copy token',
      ),
      copied,
    ),
  );
}

/** API keys: list, create, rotate, revoke. */
export async function keysPage(ctx, shown) {
  const r = await api('GET', '/api/api-keys');
  const roles = ctx.holds('workspace_roles')
    ? Object.keys((await api('GET', '/api/roles')).data.roles)
    : null;
  const root = h('div', {});
  const again = (box) => keysPage(ctx, box);
  const create = h(
    'form',
    { 'aria-labelledby': 'new-key' },
    h('h2', { id: 'new-key' }, 'New API key'),
    roles
      ? h(
          'fieldset',
          { 'data-path': 'body.roles' },
          h('legend', {}, 'Roles the key holds'),
          roles.map((x) =>
            h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'roles', value: x }), x),
          ),
        )
      : h(
          'label',
          {},
          'Roles (comma-separated)',
          h('input', { name: 'roles-text', 'data-path': 'body.roles' }),
        ),
    h(
      'div',
      { class: 'row' },
      h(
        'label',
        {},
        'Expires (e.g. 30d, 12h, a date, or never; at most a year)',
        h('input', { name: 'expires', value: '90d', 'data-path': 'body.expires' }),
      ),
      h(
        'label',
        {},
        'Description',
        h('input', { name: 'description', size: 40, 'data-path': 'body.description' }),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Create key'),
    ),
  );
  create.addEventListener('submit', async (e) => {
    e.preventDefault();
    const d = new FormData(create);
    const body = {
      roles: roles
        ? d.getAll('roles').map(String)
        : String(d.get('roles-text') ?? '')
            .split(',')
            .map((x) => x.trim())
            .filter(Boolean),
      expires: String(d.get('expires') ?? '90d'),
    };
    if (d.get('description')) body.description = String(d.get('description'));
    try {
      const made = await api('POST', '/api/api-keys', { body });
      await again(tokenBox(made.data.token, `Key ${made.data.key.id} created`));
    } catch (err) {
      if (err instanceof ApiError) showError(create, err);
    }
  });
  const rows = r.data.api_keys.map((k) =>
    h(
      'tr',
      { 'data-key-id': k.id },
      h('th', { scope: 'row' }, h('code', {}, k.id)),
      h('td', {}, k.roles.join(', ')),
      h('td', {}, k.description ?? ''),
      h('td', { class: 'hide-narrow' }, when(k.created_at)),
      h('td', {}, k.expires_at ? when(k.expires_at) : 'never'),
      h(
        'td',
        {},
        k.status,
        k.previous_expires_at && Date.parse(k.previous_expires_at) > Date.now()
          ? h('div', { class: 'muted' }, `previous token valid until ${when(k.previous_expires_at)}`)
          : '',
      ),
      h(
        'td',
        {},
        k.revoked
          ? ''
          : h(
              'button',
              {
                type: 'button',
                onclick: async () => {
                  try {
                    const rot = await api('POST', `/api/api-keys/${encodeURIComponent(k.id)}/rotate`);
                    await again(
                      tokenBox(
                        rot.data.token,
                        `Key ${k.id} rotated: the previous token stays valid for 24 hours`,
                      ),
                    );
                  } catch (err) {
                    if (err instanceof ApiError) showError(root, err);
                  }
                },
              },
              `Rotate ${k.id}`,
            ),
        ' ',
        k.revoked
          ? ''
          : h(
              'button',
              {
                type: 'button',
                class: 'danger',
                onclick: async () => {
                  if (!confirm(`Revoke key ${k.id}? Its sessions are closed at once.`)) return;
                  try {
                    await api('POST', `/api/api-keys/${encodeURIComponent(k.id)}/revoke`);
                    ctx.notice(`Key ${k.id} revoked; its sessions are closed.`);
                    await again();
                  } catch (err) {
                    if (err instanceof ApiError) showError(root, err);
                  }
                },
              },
              `Revoke ${k.id}`,
            ),
      ),
    ),
  );
  fill(
    root,
    shown ?? '',
    dataTable(
      [
        'Key',
        'Roles',
        'Description',
        h('th', { scope: 'col', class: 'hide-narrow' }, 'Created'),
        'Expires',
        'Status',
        'Actions',
      ],
      rows,
    ),
    create,
  );
  fill(
    ctx.main,
    h('h1', {}, 'API keys'),
    h(
      'p',
      { class: 'muted' },
      'A key logs in with its id as the user name and its token as the password (or Authorization: Bearer for the API).',
    ),
    root,
  );
  root.querySelector('[data-token] input')?.focus();
}
