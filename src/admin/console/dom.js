// DOM helpers of the console: element building, field-level errors from the API's 422, the explanation of 403 and 409.

/**
 * Builds an element: `h('button', { type: 'button', onclick: f }, 'Save')`. Attributes starting with
 * `on` are listeners; `false`, `null` and `undefined` attributes are left out; children are nodes or
 * text (arrays are flattened, null skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked' || k === 'selected') el[k] = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let ids = 0;
/** A fresh element id. */
export function uid(prefix = 'f') {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** Removes the field errors a form shows. */
export function clearErrors(root) {
  for (const e of root.querySelectorAll('.field-error, .form-error')) e.remove();
  for (const e of root.querySelectorAll('[aria-invalid="true"]')) {
    e.removeAttribute('aria-invalid');
    e.removeAttribute('aria-describedby');
  }
}

/**
 * Shows an API error in `root`: a 422's issues next to the control whose `data-path` names the issue's
 * path (`body.password`), the rest in one message at the top of `root`; a 403 says which app-level
 * action is missing (or what the editor cannot grant); a 409 offers `onReload` ("reload and re-apply").
 */
export function showError(root, err, opts = {}) {
  clearErrors(root);
  const box = h('div', { class: 'box bad form-error', role: 'alert' });
  const body = err.body ?? {};
  if (err.status === 422 && Array.isArray(body.issues)) {
    const rest = [];
    for (const issue of body.issues) {
      const field = findField(root, issue.path);
      if (!field) {
        rest.push(issue);
        continue;
      }
      const id = uid('err');
      field.setAttribute('aria-invalid', 'true');
      field.setAttribute('aria-describedby', id);
      const where = field.closest('label') ?? field;
      where.after(h('span', { class: 'field-error', id }, issue.message));
    }
    if (rest.length === 0) return;
    fill(
      box,
      body.message ?? 'The request does not validate:',
      h(
        'ul',
        {},
        rest.map((i) => h('li', {}, h('code', {}, i.path), ': ', i.message)),
      ),
    );
  } else fill(box, ...explain(err, opts));
  root.prepend(box);
  box.scrollIntoView?.({ block: 'nearest' });
}

function findField(root, path) {
  if (typeof path !== 'string') return null;
  for (let p = path; p; p = p.replace(/(\.[^.[]+|\[\d+\])$/, '') || '') {
    const f = root.querySelector(`[data-path="${CSS.escape(p)}"]`);
    if (f) return f;
    if (!/[.[]/.test(p)) break;
  }
  return null;
}

/** The words of an error for a person: what happened and what to do. */
export function explain(err, opts = {}) {
  const body = err.body ?? {};
  if (err.status === 403 && body.error === 'forbidden')
    return [
      `Not allowed: this needs the app-level action `,
      h('code', {}, body.action),
      ', which your roles do not hold. A workspace admin can grant it.',
    ];
  if (err.status === 403 && body.error === 'beyond-editor')
    return [
      'Not saved: an editor can never grant more than it holds.',
      h(
        'ul',
        {},
        (body.beyond ?? []).map((b) => h('li', {}, b)),
      ),
    ];
  if (err.status === 403 && body.error === 'csrf')
    return ['Not saved: the page lost its CSRF token. Reload the page and try again.'];
  if (err.status === 409 && body.error === 'conflict')
    return [
      `Someone else saved first (the policy is now at version ${body.current_version}). `,
      opts.onReload
        ? h(
            'button',
            { type: 'button', class: 'primary', onclick: opts.onReload },
            'Reload and re-apply my changes',
          )
        : 'Reload the page to see their change.',
    ];
  if (err.status === 409 && body.error === 'read-only') return [body.message];
  return [body.message ?? err.message ?? 'Something went wrong.'];
}

/** Formats an ISO time (or ms) for people, in the browser's zone. */
export function when(t) {
  if (t === null || t === undefined) return '—';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : d.toLocaleString();
}

/**
 * A table in a horizontally scrolling box: column headers (text, or a `th` node), then the rows. On a
 * phone-width screen each row reads as a card, every cell labelled with its column (`data-label`).
 */
export function dataTable(headers, rows, attrs = {}) {
  const names = headers.map((t) => (typeof t === 'string' ? t : t.textContent));
  for (const row of rows)
    [...row.children].forEach((cell, i) => {
      if (names[i]) cell.dataset.label = names[i];
    });
  return h(
    'div',
    { class: 'scroll' },
    h(
      'table',
      { ...attrs, class: `cards ${attrs.class ?? ''}`.trim() },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headers.map((t) => (typeof t === 'string' ? h('th', { scope: 'col' }, t) : t)),
        ),
      ),
      h('tbody', {}, rows),
    ),
  );
}
