// The users and groups pages: create, disable, reset a password, remove; group members and the roles attached to a group.
import { ApiError, api } from './api.js';
import { dataTable, fill, h, showError } from './dom.js';

async function attempt(root, f, reload) {
  try {
    await f();
    return true;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    showError(root, err, { onReload: reload });
    return false;
  }
}

/** Users: the list (disabled, workspace admin, groups), create, disable or enable, reset a password, remove. */
export async function usersPage(ctx) {
  const r = await api('GET', '/api/users');
  const { users } = r.data;
  const again = () => usersPage(ctx);
  const root = h('div', {});
  const create = h(
    'form',
    { 'aria-labelledby': 'new-user' },
    h('h2', { id: 'new-user' }, 'New user'),
    h(
      'div',
      { class: 'row' },
      h(
        'label',
        {},
        'Name',
        h('input', { name: 'name', required: true, autocomplete: 'off', 'data-path': 'params.name' }),
      ),
      h(
        'label',
        {},
        'Password (8 characters or more)',
        h('input', {
          name: 'password',
          type: 'password',
          autocomplete: 'new-password',
          'data-path': 'body.password',
        }),
      ),
      ctx.session.workspace_admin
        ? h('label', { class: 'inline' }, h('input', { type: 'checkbox', name: 'admin' }), 'Workspace admin')
        : '',
      h('button', { type: 'submit', class: 'primary' }, 'Create user'),
    ),
  );
  create.addEventListener('submit', async (e) => {
    e.preventDefault();
    const d = new FormData(create);
    const name = String(d.get('name') ?? '').trim();
    const body = { password: String(d.get('password') ?? '') };
    if (d.get('admin')) body.workspace_admin = true;
    if (
      await attempt(
        create,
        () => api('PUT', `/api/users/${encodeURIComponent(name)}`, { body, ifMatch: r.version }),
        again,
      )
    ) {
      ctx.notice(`User ${name} created.`);
      await again();
    }
  });
  const rows = Object.entries(users).map(([n, u]) => {
    const reset = h(
      'form',
      { class: 'row' },
      h(
        'label',
        {},
        `New password for ${n}`,
        h('input', {
          type: 'password',
          name: 'password',
          autocomplete: 'new-password',
          'data-path': 'body.password',
        }),
      ),
      h('button', { type: 'submit' }, 'Reset password'),
    );
    reset.addEventListener('submit', async (e) => {
      e.preventDefault();
      const password = String(new FormData(reset).get('password') ?? '');
      if (
        await attempt(
          reset,
          () => api('POST', `/api/users/${encodeURIComponent(n)}/password`, { body: { password } }),
          again,
        )
      )
        ctx.notice(`Password of ${n} reset.`);
    });
    return h(
      'tr',
      {},
      h('th', { scope: 'row' }, n),
      h('td', {}, u.disabled ? 'disabled' : 'active'),
      h('td', {}, u.workspace_admin ? 'yes' : 'no'),
      h('td', {}, u.groups.join(', ')),
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            onclick: async () => {
              if (
                await attempt(
                  root,
                  () =>
                    api('PUT', `/api/users/${encodeURIComponent(n)}`, {
                      body: { disabled: !u.disabled },
                      ifMatch: r.version,
                    }),
                  again,
                )
              ) {
                ctx.notice(`User ${n} ${u.disabled ? 'enabled' : 'disabled'}.`);
                await again();
              }
            },
          },
          u.disabled ? `Enable ${n}` : `Disable ${n}`,
        ),
        ' ',
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            onclick: async () => {
              if (!confirm(`Remove user ${n} from the workspace?`)) return;
              if (
                await attempt(
                  root,
                  () => api('DELETE', `/api/users/${encodeURIComponent(n)}`, { ifMatch: r.version }),
                  again,
                )
              )
                await again();
            },
          },
          `Remove ${n}`,
        ),
        h('details', {}, h('summary', {}, 'Reset password'), reset),
      ),
    );
  });
  fill(root, dataTable(['User', 'State', 'Workspace admin', 'Groups', 'Actions'], rows), create);
  fill(ctx.main, h('h1', {}, 'Users'), root);
}

/** Groups: the list (members, roles attached), create, set members, attach or detach a role, delete. */
export async function groupsPage(ctx) {
  const r = await api('GET', '/api/groups');
  const { groups } = r.data;
  const roles = ctx.holds('workspace_roles')
    ? Object.keys((await api('GET', '/api/roles')).data.roles)
    : null;
  const again = () => groupsPage(ctx);
  const root = h('div', {});
  const membersForm = (name, members) => {
    const f = h(
      'form',
      { class: 'row' },
      h(
        'label',
        {},
        `Members of ${name} (comma-separated user names)`,
        h('input', { name: 'members', value: members.join(', '), size: 40, 'data-path': 'body.members' }),
      ),
      h('button', { type: 'submit' }, name ? 'Save members' : 'Create group'),
    );
    return f;
  };
  const rows = Object.entries(groups).map(([g, v]) => {
    const f = membersForm(g, v.members);
    f.addEventListener('submit', async (e) => {
      e.preventDefault();
      const members = String(new FormData(f).get('members') ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
      if (
        await attempt(
          f,
          () => api('PUT', `/api/groups/${encodeURIComponent(g)}`, { body: { members }, ifMatch: r.version }),
          again,
        )
      ) {
        ctx.notice(`Members of ${g} saved.`);
        await again();
      }
    });
    const attach = roles
      ? h(
          'form',
          { class: 'row' },
          h(
            'label',
            {},
            `Attach a role to ${g}`,
            h(
              'select',
              { name: 'role' },
              roles.filter((x) => !v.roles.includes(x)).map((x) => h('option', { value: x }, x)),
            ),
          ),
          h('button', { type: 'submit' }, 'Attach'),
        )
      : h('p', { class: 'muted' }, 'Attaching a role also needs workspace_roles.');
    if (roles)
      attach.addEventListener('submit', async (e) => {
        e.preventDefault();
        const role = new FormData(attach).get('role');
        if (
          role &&
          (await attempt(
            attach,
            () =>
              api('PUT', `/api/groups/${encodeURIComponent(g)}/roles/${encodeURIComponent(role)}`, {
                ifMatch: r.version,
              }),
            again,
          ))
        )
          await again();
      });
    return h(
      'tr',
      {},
      h('th', { scope: 'row' }, g),
      h('td', {}, f),
      h(
        'td',
        {},
        v.roles.map((x) =>
          h(
            'span',
            { class: 'pill' },
            x,
            ' ',
            roles
              ? h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Detach role ${x} from ${g}`,
                    onclick: async () => {
                      if (
                        await attempt(
                          root,
                          () =>
                            api(
                              'DELETE',
                              `/api/groups/${encodeURIComponent(g)}/roles/${encodeURIComponent(x)}`,
                              { ifMatch: r.version },
                            ),
                          again,
                        )
                      )
                        await again();
                    },
                  },
                  '×',
                )
              : '',
          ),
        ),
        attach,
      ),
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            onclick: async () => {
              if (
                confirm(`Delete group ${g}?`) &&
                (await attempt(
                  root,
                  () => api('DELETE', `/api/groups/${encodeURIComponent(g)}`, { ifMatch: r.version }),
                  again,
                ))
              )
                await again();
            },
          },
          `Delete ${g}`,
        ),
      ),
    );
  });
  const create = h(
    'form',
    { 'aria-labelledby': 'new-group' },
    h('h2', { id: 'new-group' }, 'New group'),
    h(
      'div',
      { class: 'row' },
      h('label', {}, 'Name', h('input', { name: 'name', required: true, 'data-path': 'params.name' })),
      h(
        'label',
        {},
        'Members (comma-separated)',
        h('input', { name: 'members', 'data-path': 'body.members' }),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Create group'),
    ),
  );
  create.addEventListener('submit', async (e) => {
    e.preventDefault();
    const d = new FormData(create);
    const name = String(d.get('name') ?? '').trim();
    const members = String(d.get('members') ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    if (
      await attempt(
        create,
        () =>
          api('PUT', `/api/groups/${encodeURIComponent(name)}`, { body: { members }, ifMatch: r.version }),
        again,
      )
    )
      await again();
  });
  fill(root, dataTable(['Group', 'Members', 'Roles', ''], rows), create);
  fill(ctx.main, h('h1', {}, 'Groups'), root);
}
