/**
 * The ledger explorer (/explorer on the ledger port): its static route (content types, the
 * self-only Content Security Policy, hostile paths answered 400/404 in the gateway's error
 * shape and never with a file outside the folder), then the page itself in a headless
 * Chromium: a signed intkey batch submitted over HTTP shows up live in the block list, in
 * the drill-down (block → batch → transaction → receipt, intkey value decoded), in the state
 * browser and in the batch status lookup, with no request leaving the node and no policy
 * violation.
 *
 * CAIRN_EXPLORER_SCREENSHOT=docs/explorer.png also commits a minute of batches and saves a
 * screenshot of the page (how docs/explorer.png is made).
 */
import t from 'tap';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { startTestNode } from './helpers/node.js';
import { freePort } from './helpers/ports.js';
import { launchBrowser } from './helpers/browser.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted, getJson, type Signer } from './helpers/batches.js';
import { rawRequest, rawJson } from './helpers/raw.js';
import { intkeyAddress } from '../src/families/intkey.js';
import { EXPLORER_CSP, explorerDir, loadExplorerFiles, registerExplorer } from '../src/explorer/static.js';
import { HttpServer } from '../src/http/server.js';
import { ledgerErrorReplyFactory } from '../src/ledger-api/errors.js';

const found = explorerDir();
if (found === undefined) throw new Error('explorer/index.html not found from src/explorer/');
const DIR = found;
const node = await startTestNode();
t.teardown(() => node.stop());
const port = Number(new URL(node.ledgerUrl).port);

/** The error body of the ledger gateway: {"error": {code, message, title}} and nothing else. */
function isGatewayError(body: any, status: number): boolean {
  return (
    body !== undefined &&
    Object.keys(body).join() === 'error' &&
    body.error.code === status &&
    typeof body.error.title === 'string' &&
    typeof body.error.message === 'string'
  );
}

t.test('the page files are served with their content types, no-cache and a self-only policy', async (t) => {
  t.equal(DIR, resolve('explorer'), 'the folder is found from the sources');
  t.equal(explorerDir(pathToFileURL(resolve('dist/src/explorer/static.js')).href), DIR, 'and from the build (dist/src/explorer/)');
  t.equal(explorerDir(pathToFileURL(join(tmpdir(), 'a/b/static.js')).href), undefined, 'and not where there is none');
  const redirect = await fetch(`${node.ledgerUrl}/explorer`, { redirect: 'manual' });
  t.equal(redirect.status, 302);
  t.equal(redirect.headers.get('location'), 'explorer/', 'relative, so a path prefix in front of the node still works');
  const types: Record<string, string> = {
    'index.html': 'text/html; charset=utf-8',
    'app.js': 'text/javascript; charset=utf-8',
    'cbor.js': 'text/javascript; charset=utf-8',
    'chart.js': 'text/javascript; charset=utf-8',
    'explorer.css': 'text/css; charset=utf-8',
    'favicon.svg': 'image/svg+xml',
  };
  for (const [name, type] of Object.entries(types)) {
    const r = await fetch(`${node.ledgerUrl}/explorer/${name}`);
    t.equal(r.status, 200, name);
    t.equal(r.headers.get('content-type'), type, `${name}: content type`);
    t.equal(r.headers.get('content-security-policy'), EXPLORER_CSP, `${name}: policy`);
    t.equal(r.headers.get('cache-control'), 'no-cache', `${name}: revalidated on every load`);
    t.equal(r.headers.get('x-content-type-options'), 'nosniff');
    t.same(Buffer.from(await r.arrayBuffer()), readFileSync(join(DIR, name)), `${name}: the file's bytes`);
  }
  t.match(EXPLORER_CSP, /^default-src 'self';/);
  t.notMatch(EXPLORER_CSP, /unsafe|\*|https?:|data:/, 'nothing but the node itself');
  const index = await (await fetch(`${node.ledgerUrl}/explorer/`)).text();
  t.equal(index, readFileSync(join(DIR, 'index.html'), 'utf8'), '/explorer/ is index.html');
  t.notMatch(index, /https?:\/\//, 'the page names no other site');
  t.notMatch(index, /<script(?![^>]*\bsrc=)|style=/, 'no inline script or style (the policy would block them)');
  const post = await fetch(`${node.ledgerUrl}/explorer/app.js`, { method: 'POST', body: 'x' });
  t.equal(post.status, 405);
  t.ok(isGatewayError(await post.json(), 405), '405 in the gateway error shape');
});

t.test('hostile paths get 400 or 404 in the gateway error shape and never a file outside the folder', async (t) => {
  const outside = [readFileSync('package.json', 'utf8').slice(0, 40), readFileSync('src/node.ts', 'utf8').slice(0, 40)];
  const cases: Array<[string, number]> = [
    ['/explorer/../package.json', 400],
    ['/explorer/..%2fpackage.json', 400],
    ['/explorer/%2e%2e/package.json', 400],
    ['/explorer/%2e%2e%2fpackage.json', 400],
    ['/explorer/%2E%2E%2Fsrc%2Fnode.ts', 400],
    ['/explorer/..%5cpackage.json', 400],
    ['/explorer/..', 400],
    ['/explorer/%2e%2e', 400],
    ['/explorer/.', 400],
    ['/explorer//etc/passwd', 400],
    ['/explorer/%2fetc%2fpasswd', 400],
    ['/explorer/sub/app.js', 400],
    ['/explorer/app.js%00', 400],
    ['/explorer/%00', 400],
    ['/explorer/%zz', 400],
    ['/explorer/%c0%ae%c0%ae%2fpackage.json', 400],
    ['/explorer/.gitignore', 404],
    ['/explorer/package.json', 404],
    ['/explorer/__proto__', 404],
    ['/explorer/constructor', 404],
    ['/explorer/app.js.map', 404],
    [`/explorer/${'a'.repeat(3000)}`, 404],
    [`/explorer/${'%2e%2e%2f'.repeat(400)}package.json`, 400],
  ];
  for (const [path, status] of cases) {
    const r = await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    const label = path.length > 60 ? `${path.slice(0, 40)}… (${path.length} bytes)` : path;
    t.equal(r.status, status, label);
    t.ok(isGatewayError(rawJson(r), status), `${label}: gateway error shape`);
    t.ok(r.text.length < 2000, `${label}: the answer does not echo a long path`);
    for (const o of outside) t.notOk(r.text.includes(o), `${label}: no file from outside the folder`);
  }
  // Over the request-target limit: 414 from the front end (or the connection closed), never a file.
  const long = await rawRequest(port, `GET /explorer/${'a'.repeat(9000)} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  t.ok(long.status === 414 || long.status === 0, `a 9000-byte path: ${long.status}`);
  // Paths beside the route are the gateway's plain 404.
  for (const path of ['/explorerx', '/explorer.html', '/Explorer/']) {
    const r = await fetch(`${node.ledgerUrl}${path}`);
    t.equal(r.status, 404, path);
    t.ok(isGatewayError(await r.json(), 404), `${path}: gateway error shape`);
  }
});

t.test('only top-level files with a known extension are served; a missing page is 404', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-explorer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const name of ['app.js', 'notes.txt', '.hidden.js', 'Upper.js', 'x.min.js']) writeFileSync(join(dir, name), name);
  mkdirSync(join(dir, 'sub.js'));
  t.same([...loadExplorerFiles(dir).keys()], ['app.js', 'x.min.js'], 'no dotfile, folder, unknown extension or odd name');
  t.equal(loadExplorerFiles(join(dir, 'missing')).size, 0);
  t.equal(loadExplorerFiles(undefined).size, 0);

  // A server whose folder has no index.html: /explorer/ is a 404 in the gateway's shape, the files it has are served.
  const server = new HttpServer({ name: 'explorer-test', maxBodyBytes: 1024, boundParams: false, errorReply: ledgerErrorReplyFactory() });
  registerExplorer(server, dir);
  const p = await server.listen('127.0.0.1', 0);
  t.teardown(() => server.close(0));
  const index = await fetch(`http://127.0.0.1:${p}/explorer/`);
  t.equal(index.status, 404);
  t.ok(isGatewayError(await index.json(), 404));
  const app = await fetch(`http://127.0.0.1:${p}/explorer/app.js`);
  t.equal(await app.text(), 'app.js');
});

/** Commits one batch of intkey transactions; returns the batch id once it is committed. */
async function commitTo(url: string, signer: Signer, ops: Array<[string, string, number]>, expect = 'COMMITTED'): Promise<string> {
  const batch = intkeyBatch(signer, ops);
  const r = await postBatches(url, batchList(batch));
  if (r.status !== 202) throw new Error(`submit: ${r.status} ${JSON.stringify(r.json)}`);
  const [s] = await waitCommitted(url, [batch.id], 60);
  if (s.status !== expect) throw new Error(`batch ${batch.id}: ${s.status}, expected ${expect}`);
  return batch.id;
}

const commit = (signer: Signer, ops: Array<[string, string, number]>, expect = 'COMMITTED'): Promise<string> =>
  commitTo(node.ledgerUrl, signer, ops, expect);

async function blockOf(batchId: string): Promise<string> {
  const { json } = await getJson(`${node.ledgerUrl}/blocks?limit=20`);
  const b = json.data.find((x: any) => x.header.batch_ids.includes(batchId));
  if (!b) throw new Error(`no block holds ${batchId}`);
  return b.header_signature;
}

const text = (page: Page, selector: string): Promise<string> => page.locator(selector).first().innerText();

t.test('in a browser: a committed batch appears live, in the drill-down, in state and in the status lookup', async (t) => {
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    // Outcomes, not durations: generous bounds for a loaded machine.
    page.setDefaultTimeout(30_000);
    const requests: string[] = [];
    const pageErrors: string[] = [];
    const consoleErrors: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      // A lookup the test makes fail on purpose (400) is logged by the browser as a failed load.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) consoleErrors.push(m.text());
    });
    await page.addInitScript(() => {
      const w = window as any;
      w.violations = [];
      document.addEventListener('securitypolicyviolation', (e) => w.violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });

    await page.goto(`${node.ledgerUrl}/explorer`);
    t.equal(new URL(page.url()).pathname, '/explorer/', 'redirected into the folder');
    await page.waitForSelector('#live.on');
    await page.waitForSelector('#blocks tr[data-block-num="0"]');
    t.equal(await text(page, '#head-num'), '#0', 'the head: genesis');
    await page.waitForFunction(() => document.getElementById('node-status')?.textContent === 'answering');
    t.equal(await text(page, '#node-peers'), 'none configured', '/peers of a single node');

    // A batch submitted over HTTP while the page is open: its block arrives through the websocket.
    const signer = newSigner();
    const name = `explorer-${Date.now().toString(36)}`;
    const address = intkeyAddress(name);
    const batchId = await commit(signer, [['set', name, 42]]);
    const blockId = await blockOf(batchId);
    const row = page.locator(`#blocks tr[data-block-id="${blockId}"]`);
    await row.waitFor();
    t.equal(await row.getAttribute('class'), 'fresh', 'added by the live feed, not by the first load');
    await page.waitForFunction((id) => document.getElementById('head-id')?.getAttribute('title') === id, blockId);
    await page.waitForFunction(() => Number(document.getElementById('chart')?.dataset.total) >= 1);
    t.pass('the head and the throughput count follow the new block');

    // Drill-down: block → batch → transaction → receipt, the intkey value decoded.
    await row.locator('a').click();
    const batchRow = page.locator(`#detail-batches tr[data-batch-id="${batchId}"]`);
    await batchRow.waitFor();
    await batchRow.locator('a').click();
    const txnRow = page.locator('#detail-txns tbody tr');
    await txnRow.first().waitFor();
    t.equal(await txnRow.count(), 1);
    t.match(await txnRow.first().innerText(), /intkey 1\.0/);
    t.match(await txnRow.first().innerText(), new RegExp(`\\bset ${name} 42\\b`), 'the payload decoded');
    await txnRow.first().locator('a').click();
    const change = page.locator(`#detail-receipt tr[data-address="${address}"]`);
    await change.waitFor();
    t.match(await change.innerText(), new RegExp(`SET\\s+${name} = 42`), 'the receipt: the state change, its value decoded');
    t.match(await text(page, '#crumbs'), /block › batch .* › txn /, 'the path back up');

    // State browsed by prefix: the address and its decoded value.
    await page.fill('#state-prefix', address.slice(0, 10));
    await page.click('#state-form button');
    const leaf = page.locator(`#state-rows tr[data-address="${address}"]`);
    await leaf.waitFor();
    t.match(await leaf.innerText(), new RegExp(`intkey\\s+${name} = 42`));
    await page.fill('#state-prefix', 'abc');
    await page.click('#state-form button');
    await page.waitForSelector('#state-error:not([hidden])');
    t.match(await text(page, '#state-error'), /Invalid State Address/, 'a bad prefix: the gateway error shown');
    // Settings: the Setting protobuf decoded into its key and value.
    await page.fill('#state-prefix', '000000');
    await page.click('#state-form button');
    await page.waitForSelector('#state-rows tr[data-address^="000000"]');
    t.match(await text(page, '#state-rows'), /settings\s+sawtooth\.consensus\.algorithm\.name = Devmode/, 'a setting decoded');

    // Batch status lookup: committed (with a link to the batch), invalid (with the reason), a bad id.
    await page.fill('#status-id', batchId);
    await page.click('#status-form button');
    await page.waitForSelector('#status-result .status-entry[data-status="COMMITTED"]');
    const invalidId = await commit(signer, [['inc', `${name}-absent`, 1]], 'INVALID');
    await page.fill('#status-id', invalidId);
    await page.click('#status-form button');
    const invalid = page.locator('#status-result .status-entry[data-status="INVALID"]');
    await invalid.waitFor();
    t.match(await invalid.innerText(), /INVALID/);
    t.ok((await invalid.locator('li').count()) >= 1, 'the invalid transaction listed with its message');
    await page.fill('#status-id', 'not-an-id');
    await page.click('#status-form button');
    await page.waitForSelector('#status-result .error');
    t.match(await text(page, '#status-result .error'), /Invalid Resource Id/);

    // A second commit with the same name: the state table, left on its first page, follows it live.
    await page.fill('#state-prefix', '1cf126');
    await page.click('#state-form button');
    await leaf.waitFor();
    await commit(signer, [['inc', name, 8]]);
    await page.waitForFunction(
      ([addr, n]) => document.querySelector(`#state-rows tr[data-address="${addr}"]`)?.textContent?.includes(`${n} = 50`) ?? false,
      [address, name],
    );
    t.pass('the state value after a later block: 50');

    if (process.env.CAIRN_EXPLORER_SCREENSHOT) await screenshot(page, signer, process.env.CAIRN_EXPLORER_SCREENSHOT);

    const origin = new URL(node.ledgerUrl).origin;
    t.same(
      requests.filter((u) => new URL(u).origin !== origin && !u.startsWith('ws://127.0.0.1')),
      [],
      'every request goes to the node',
    );
    t.same(await page.evaluate(() => (window as any).violations), [], 'no Content Security Policy violation');
    t.same(pageErrors, [], 'no uncaught error in the page');
    t.same(consoleErrors, [], 'no error in the console');
  } finally {
    await browser?.close();
  }
});

t.test('in a browser: the live list reconnects by itself after the node restarts', async (t) => {
  // A node of its own on a fixed port, so that the restarted node is at the address the page knows.
  const free = await freePort();
  const env = { CAIRN_LEDGER_BIND: `127.0.0.1:${free}` };
  let own = await startTestNode(env);
  const dataDir = own.dataDir;
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    await page.goto(`${own.ledgerUrl}/explorer/`);
    await page.waitForSelector('#live.on');
    await page.waitForSelector('#blocks tr[data-block-num="0"]');
    await own.stop({ keepData: true });
    await page.waitForSelector('#live.off');
    t.equal(await text(page, '#live'), 'reconnecting', 'the page says the feed is down');
    await page.waitForSelector('#node-status.error');
    t.match(
      await text(page, '#node-status'),
      /^no answer from the node at 127\.0\.0\.1:\d+: it is stopped, restarting or unreachable$/,
      'the reason, not "Failed to fetch"',
    );
    own = await startTestNode(env, dataDir);
    await page.waitForSelector('#live.on');
    const batchId = await commitTo(own.ledgerUrl, newSigner(), [['set', 'after-restart', 7]]);
    const { json } = await getJson(`${own.ledgerUrl}/blocks?limit=1`);
    t.ok(json.data[0].header.batch_ids.includes(batchId));
    await page.locator(`#blocks tr[data-block-id="${json.data[0].header_signature}"]`).waitFor();
    t.pass('a block committed after the restart appears');
  } finally {
    await browser?.close();
    // Stopped already if the restart failed: then only its directory is left to remove.
    await own.stop().catch(() => rmSync(dataDir, { recursive: true, force: true }));
  }
});

/** A minute of batches of a few transactions each, a transaction's receipt open, then a screenshot of the whole page. */
async function screenshot(page: Page, signer: Signer, path: string): Promise<void> {
  const names = ['apples', 'pears', 'plums', 'figs', 'limes', 'dates', 'kiwis', 'cherries'];
  const until = Date.now() + 60_000;
  let last = '';
  for (let i = 0; Date.now() < until; i++) {
    const n = 1 + ((i * 7) % 5) + (i % 3);
    last = await commit(
      signer,
      Array.from({ length: n }, (_, j) => ['set', `${names[(i + j) % names.length]}-${i}`, (i * 13 + j * 5) % 100] as [string, string, number]),
    );
    await new Promise((r) => setTimeout(r, 400 + ((i * 37) % 5) * 150));
  }
  const { json } = await getJson(`${node.ledgerUrl}/batches/${last}`);
  const hash = `#/block/${await blockOf(last)}/batch/${last}/txn/${json.data.transactions[0].header_signature}`;
  await page.evaluate((h) => {
    location.hash = h;
  }, hash);
  await page.waitForSelector('#detail-receipt');
  await page.fill('#status-id', last);
  await page.click('#status-form button');
  await page.waitForSelector('#status-result .status-entry');
  await page.waitForTimeout(1500);
  await page.screenshot({ path, fullPage: true });
}
