// The roles pages: the list with the default role, and one role (description, tenants, the grid, the dry run, save).
import { ApiError, api } from './api.js';
import { clearErrors, dataTable, fill, h, showError } from './dom.js';
import { dryRunReport } from './dry-run.js';
import { makeGrid, scopeName, setCell, useActions } from './grid.js';

const draftKey = (name) => `pgwarden.draft.${name}`;

/** The list of roles: description, tenants, default role; create a role. */
export async function rolesPage(ctx) {
  const r = await api('GET', '/api/roles');
  const { roles, default_role: def } = r.data;
  const names = Object.keys(roles);
  const readOnly = !r.version;
  const defForm = h(
    'form',
    { class: 'row' },
    h(
      'label',
      {},
      'Default role (for users no role names as a tenant)',
      h(
        'select',
        { name: 'role', 'data-path': 'body.role', disabled: readOnly },
        h('option', { value: '' }, '(none)'),
        names.map((n) => h('option', { value: n, selected: n === def }, n)),
      ),
    ),
    h('button', { type: 'submit', disabled: readOnly }, 'Save default role'),
  );
  defForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const role = new FormData(defForm).get('role') || null;
    try {
      await api('PUT', '/api/default-role', { body: { role }, ifMatch: r.version });
      ctx.notice(`Default role: ${role ?? 'none'}.`);
      await rolesPage(ctx);
    } catch (err) {
      if (err instanceof ApiError) showError(defForm, err, { onReload: () => rolesPage(ctx) });
    }
  });
  const create = h(
    'form',
    { class: 'row' },
    h(
      'label',
      {},
      'New role name',
      h('input', {
        name: 'name',
        required: true,
        pattern: '[A-Za-z0-9_\\-]{1,63}',
        'data-path': 'params.name',
      }),
    ),
    h('button', { type: 'submit', disabled: readOnly }, 'Create role'),
  );
  create.addEventListener('submit', (e) => {
    e.preventDefault();
    const n = String(new FormData(create).get('name') ?? '').trim();
    if (n) location.hash = `#/roles/${encodeURIComponent(n)}`;
  });
  fill(
    ctx.main,
    h('h1', {}, 'Roles'),
    readOnly
      ? h(
          'p',
          { class: 'box warn', id: 'grid-reason' },
          'The policy is the config file, so it is read-only here: set policy_store to edit it through the console.',
        )
      : '',
    dataTable(
      ['Role', 'Description', 'Tenants', 'Rules'],
      names.map((n) =>
        h(
          'tr',
          {},
          h(
            'th',
            { scope: 'row' },
            h('a', { href: `#/roles/${encodeURIComponent(n)}` }, n),
            n === def ? ' (default)' : '',
          ),
          h('td', {}, roles[n].description ?? ''),
          h(
            'td',
            {},
            roles[n].tenants.map((t) => h('code', { class: 'pill' }, t)),
          ),
          h('td', {}, String(roles[n].permissions.length)),
        ),
      ),
    ),
    h('h2', {}, 'Default role'),
    defForm,
    h('h2', {}, 'New role'),
    create,
  );
}

/** Applies the recorded edits to a role as read. */
function applyOps(role, ops) {
  let out = structuredClone(role);
  for (const op of ops) {
    if (op.t === 'cell')
      out = { ...out, permissions: setCell(out.permissions, op.scope, op.action, op.state) };
    if (op.t === 'tenants') out = { ...out, tenants: op.value };
    if (op.t === 'description') out = { ...out, description: op.value || undefined };
  }
  return out;
}

/** One role: its description and tenants, the permission grid, the dry run and save. */
export async function rolePage(ctx, name) {
  const r = await api('GET', '/api/roles');
  let version = r.version;
  let all = r.data.roles;
  const exists = Object.hasOwn(all, name);
  let base = exists ? all[name] : { tenants: [], permissions: [] };
  const stored = JSON.parse(sessionStorage.getItem(draftKey(name)) ?? 'null');
  const ops = stored?.ops ?? [];
  let draft = applyOps(base, ops);
  const readOnly = !version;
  const cat = (await api('GET', '/api/catalog')).data;
  useActions(cat);
  const databases = cat.databases;
  const users = ctx.holds('workspace_users')
    ? Object.keys((await api('GET', '/api/users')).data.users)
    : null;
  const groups = ctx.holds('workspace_groups')
    ? Object.keys((await api('GET', '/api/groups')).data.groups)
    : null;

  const status = h('p', { role: 'status', class: 'muted' });
  const dry = h('section', { 'aria-labelledby': 'dry-title' });
  const actions = h('div', { class: 'row' });
  const form = h('div', {});

  const rulesBox = h('details', {});
  const renderRules = () =>
    fill(
      rulesBox,
      h('summary', {}, `Rules as written (${draft.permissions.length})`),
      h(
        'ul',
        {},
        draft.permissions.map((p) =>
          h(
            'li',
            {},
            h('code', {}, `${p.effect} ${p.actions.join(', ')} on ${scopeName(p) || '(workspace)'}`),
          ),
        ),
      ),
    );
  const persist = () => {
    renderRules();
    if (ops.length) sessionStorage.setItem(draftKey(name), JSON.stringify({ ops }));
    else sessionStorage.removeItem(draftKey(name));
    fill(
      status,
      ops.length
        ? `${ops.length} change${ops.length > 1 ? 's' : ''} not saved yet. Run the dry run, then save.`
        : 'No unsaved change.',
    );
    fill(dry);
    renderActions(false);
  };
  const record = (op) => {
    ops.push(op);
    draft = applyOps(base, ops);
    persist();
  };

  const grid = makeGrid(name, databases, {
    permissions: () => draft.permissions,
    onCell: (scope, action, state) => record({ t: 'cell', scope, action, state }),
    readOnly,
  });

  const tenantsBox = h('div', {});
  const renderTenants = () => {
    const kind = h(
      'select',
      { 'aria-label': 'Tenant kind' },
      h('option', { value: 'u' }, 'user'),
      h('option', { value: 'g' }, 'group'),
      h('option', { value: '*' }, 'everyone (*)'),
    );
    const who = () => {
      const k = kind.value;
      const list = k === 'u' ? users : k === 'g' ? groups : [];
      if (k === '*') return h('span', {});
      return list
        ? h(
            'select',
            { 'aria-label': k === 'u' ? 'User' : 'Group' },
            list.map((n) => h('option', { value: n }, n)),
          )
        : h('input', { 'aria-label': k === 'u' ? 'User name' : 'Group name' });
    };
    let picker = who();
    const holder = h('span', {}, picker);
    kind.addEventListener('change', () => {
      picker = who();
      fill(holder, picker);
    });
    fill(
      tenantsBox,
      h(
        'fieldset',
        { 'data-path': 'body.tenants' },
        h('legend', {}, 'Tenants (who holds this role)'),
        draft.tenants.length
          ? h(
              'ul',
              {},
              draft.tenants.map((t) =>
                h(
                  'li',
                  {},
                  h('code', {}, t),
                  ' ',
                  h(
                    'button',
                    {
                      type: 'button',
                      disabled: readOnly,
                      'aria-label': `Remove tenant ${t}`,
                      onclick: () => {
                        record({ t: 'tenants', value: draft.tenants.filter((x) => x !== t) });
                        renderTenants();
                      },
                    },
                    'Remove',
                  ),
                ),
              ),
            )
          : h('p', { class: 'muted' }, 'No tenant: nobody holds this role unless it is the default role.'),
        h(
          'div',
          { class: 'row' },
          kind,
          holder,
          h(
            'button',
            {
              type: 'button',
              disabled: readOnly,
              onclick: () => {
                const t = kind.value === '*' ? '*' : `${kind.value}/${picker.value}`;
                if (t.endsWith('/') || draft.tenants.includes(t)) return;
                record({ t: 'tenants', value: [...draft.tenants, t] });
                renderTenants();
              },
            },
            'Add tenant',
          ),
        ),
      ),
    );
  };

  const description = h('input', {
    value: draft.description ?? '',
    size: 60,
    disabled: readOnly,
    'data-path': 'body.description',
  });
  description.addEventListener('change', () => record({ t: 'description', value: description.value }));

  async function dryRun() {
    fill(
      dry,
      h('h2', { id: 'dry-title' }, 'Dry run'),
      h('p', {}, 'Deciding the recent statements again under the change…'),
    );
    try {
      const rep = await api('POST', '/api/replay', {
        body: { policy: { roles: { ...all, [name]: draft } } },
      });
      fill(dry, ...dryRunReport(rep.data));
      renderActions(true);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      fill(dry, h('h2', { id: 'dry-title' }, 'Dry run'));
      showError(dry, err);
      dry.append(h('p', {}, 'The dry run is not available; you may still save.'));
      renderActions(true);
    }
  }

  async function save() {
    clearErrors(form);
    const body = { tenants: draft.tenants, permissions: draft.permissions };
    if (draft.description) body.description = draft.description;
    try {
      const s = await api('PUT', `/api/roles/${encodeURIComponent(name)}`, { body, ifMatch: version });
      ops.length = 0;
      sessionStorage.removeItem(draftKey(name));
      ctx.notice(`Role ${name} saved: policy version ${s.data.version}.`);
      await rolePage(ctx, name);
    } catch (err) {
      if (err instanceof ApiError) showError(form, err, { onReload: reloadAndReapply });
    }
  }

  async function reloadAndReapply() {
    const again = await api('GET', '/api/roles');
    version = again.version;
    all = again.data.roles;
    base = Object.hasOwn(all, name) ? all[name] : { tenants: [], permissions: [] };
    draft = applyOps(base, ops);
    clearErrors(form);
    ctx.notice(
      `Reloaded version ${version}; your ${ops.length} change(s) are applied on top. Check the dry run again.`,
    );
    renderTenants();
    await grid.refresh();
    persist();
    await dryRun();
  }

  function renderActions(ran) {
    fill(
      actions,
      h('button', { type: 'button', disabled: readOnly || ops.length === 0, onclick: dryRun }, 'Dry run'),
      h(
        'button',
        { type: 'button', class: 'primary', disabled: readOnly || ops.length === 0 || !ran, onclick: save },
        'Save',
      ),
      h(
        'button',
        {
          type: 'button',
          disabled: ops.length === 0,
          onclick: async () => {
            ops.length = 0;
            sessionStorage.removeItem(draftKey(name));
            await rolePage(ctx, name);
          },
        },
        'Discard changes',
      ),
      exists
        ? h(
            'button',
            {
              type: 'button',
              class: 'danger',
              disabled: readOnly,
              onclick: async () => {
                if (!confirm(`Delete role ${name}?`)) return;
                try {
                  await api('DELETE', `/api/roles/${encodeURIComponent(name)}`, { ifMatch: version });
                  sessionStorage.removeItem(draftKey(name));
                  ctx.notice(`Role ${name} deleted.`);
                  location.hash = '#/roles';
                } catch (err) {
                  if (err instanceof ApiError) showError(form, err, { onReload: reloadAndReapply });
                }
              },
            },
            'Delete role',
          )
        : '',
    );
  }

  fill(
    ctx.main,
    h('p', {}, h('a', { href: '#/roles' }, '← Roles')),
    h('h1', {}, `Role ${name}`, exists ? '' : ' (new)'),
    readOnly
      ? h(
          'p',
          { class: 'box warn', id: 'grid-reason' },
          'Read-only: the policy is the config file; set policy_store to edit it here.',
        )
      : '',
    form,
    h('label', {}, 'Description', description),
    tenantsBox,
    h('h2', {}, 'Permissions'),
    h(
      'p',
      { class: 'muted' },
      'Each cell: inherit (no rule of its own), allow or deny. Deny always wins; a database rule covers everything in it.',
    ),
    rulesBox,
    grid.el,
    status,
    actions,
    dry,
  );
  renderTenants();
  persist();
  await grid.refresh();
  if (stored?.ops?.length)
    ctx.notice(`Your unsaved edit of role ${name} (${ops.length} change(s)) is restored.`);
}
