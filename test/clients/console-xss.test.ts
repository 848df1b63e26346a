// Stored XSS against the web console in Debian's Chromium: markup in a role's description (a name with markup is refused), a statement's text and its column names in the audit log and "try a statement" renders as text, never as elements or script.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type AdminInstance, apiLogin, startAdminInstance } from '../helpers/admin-instance.js';
import { waitForFileText } from '../helpers/audit-file.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-console-xss-'));
const auditFile = path.join(dir, 'audit.jsonl');
/** Markup that sets `window.__pwned` wherever it is parsed as HTML (and script may run). */
const PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
/** Role names are 1–63 letters, digits, `_` or `-` (a name with markup is refused, 422): the markup goes into the description. */
const ROLE = 'xss-role';
const MARKUP_ROLE = '<img src=x onerror=window.__pwned=3>';
// The audit keeps literals as $1, so the markup goes into the names of the result columns.
const SQL = 'SELECT 1 AS "<img src=x onerror=window.__pwned=4>", 2 AS "<b id=injected>col</b>"';
let instance: AdminInstance;
let browser: Browser;
let base = '';

/** No element the payloads would make exists, and none of their script ran. */
async function expectInert(page: Page, where: string): Promise<void> {
  const found = await page.evaluate(() => ({
    pwned: (window as unknown as { __pwned?: number }).__pwned ?? null,
    imgs: document.querySelectorAll('img[src="x"]').length,
    scripts: [...document.scripts].filter((s) => s.textContent?.includes('__pwned')).length,
    injected: document.querySelectorAll('#injected').length,
  }));
  expect(found, where).toEqual({ pwned: null, imgs: 0, scripts: 0, injected: 0 });
}

beforeAll(async () => {
  instance = await startAdminInstance(dir, auditFile);
  base = instance.base;
  const dba = await apiLogin(base, 'dba');
  const putRole = async (name: string) => {
    const roles = await fetch(`${base}/api/roles`, { headers: { cookie: dba.cookie } });
    return fetch(`${base}/api/roles/${encodeURIComponent(name)}`, {
      method: 'PUT',
      headers: {
        cookie: dba.cookie,
        'x-csrf-token': dba.csrf,
        'content-type': 'application/json',
        'if-match': roles.headers.get('etag') ?? '0',
      },
      body: JSON.stringify({
        description: PAYLOAD,
        tenants: [],
        permissions: [
          { effect: 'allow', actions: ['SELECT'], database: 'demo', schema: 'public', table: 'orgs' },
        ],
      }),
    });
  };
  const refused = await putRole(MARKUP_ROLE);
  expect(refused.status, await refused.text()).toBe(422);
  const put = await putRole(ROLE);
  expect(put.status, await put.text()).toBe(200);
  const c = new pg.Client({
    connectionString: `postgres://alice:alice@127.0.0.1:${instance.served.port}/demo`,
  });
  await c.connect();
  await c.query(SQL);
  await c.end();
  await waitForFileText(auditFile, 'injected');
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-background-networking'],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await instance?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('console stored XSS', () => {
  test('role descriptions, audit SQL and column names, try-a-statement output render as text', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${base}/console/`);
    await page.getByLabel('User', { exact: true }).fill('dba');
    await page.getByLabel('Password', { exact: true }).fill('dba');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('button', { name: 'Log out' }).waitFor();

    await page.goto(`${base}/console/#/roles`);
    await page.getByText(ROLE, { exact: true }).first().waitFor();
    await expect(page.locator('main').textContent()).resolves.toContain(PAYLOAD);
    await expectInert(page, 'roles');

    await page.goto(`${base}/console/#/roles/${encodeURIComponent(ROLE)}`);
    await page.getByRole('heading', { name: `Role ${ROLE}` }).waitFor();
    await expectInert(page, 'role grid');

    await page.goto(`${base}/console/#/audit`);
    await page
      .getByText(/injected/)
      .first()
      .waitFor();
    await page
      .getByText(/injected/)
      .first()
      .click();
    await page.waitForTimeout(500);
    await expectInert(page, 'audit');

    await page.goto(`${base}/console/#/try`);
    await page.getByLabel('SQL').fill(SQL);
    await page.getByRole('button', { name: 'Check' }).click();
    const columns = page.getByRole('table', { name: 'Result columns of statement 1' });
    await columns.waitFor();
    expect(await columns.textContent()).toContain('<b id=injected>col</b>');
    await expectInert(page, 'try');
    await context.close();
  }, 60_000);
});
