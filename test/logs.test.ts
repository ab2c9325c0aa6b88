/**
 * Logs: JSON lines when stderr is not a terminal (a child node's stderr is a pipe), readable
 * lines when asked, request ids in the request lines and the x-request-id header, and the
 * effective configuration at start with no secret in it (nor any private key anywhere).
 */
import t, { type Test } from 'tap';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeConfig, loadConfig } from '../src/config.js';
import { prettyLine, logFormat } from '../src/log.js';
import { startChild, startLine } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, waitCommitted } from './helpers/batches.js';

const SECRET = `oauth-secret-${Date.now().toString(36)}-do-not-log`;

function tempDir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'cairn-logs-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

t.test('JSON lines, the configuration without secrets, request ids', async (t) => {
  const dir = tempDir(t);
  const node = await startChild(dir, {
    CAIRN_LOG_LEVEL: 'debug',
    CAIRN_OAUTH_CLIENT_SECRET: SECRET,
    CAIRN_OAUTH_CLIENT_ID: 'cairn-test-client',
  });
  t.teardown(() => node.kill9());
  const r = await fetch(`${node.ledgerUrl}/status`, { headers: { 'x-request-id': 'logs-test-1' } });
  t.equal(r.headers.get('x-request-id'), 'logs-test-1');
  const batch = intkeyBatch(newSigner(), [['set', 'logged', 1]]);
  const posted = await fetch(`${node.ledgerUrl}/batches`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Uint8Array(batchList(batch)),
  });
  t.equal(posted.status, 202);
  const madeId = posted.headers.get('x-request-id');
  t.match(madeId, /^[0-9a-f]{8}-[0-9a-z]+$/);
  t.equal((await waitCommitted(node.ledgerUrl, [batch.id], 30))[0].status, 'COMMITTED');
  t.equal(await node.stop(), 0);

  const lines = node.log().split('\n').filter(Boolean);
  const records = lines.map((l) => {
    try {
      return JSON.parse(l) as Record<string, any>;
    } catch {
      return null;
    }
  });
  t.same(
    lines.filter((_, i) => records[i] === null),
    [],
    'every line is JSON',
  );
  const recs = records.filter((x): x is Record<string, any> => x !== null);
  t.ok(
    recs.every((x) => typeof x.time === 'string' && typeof x.msg === 'string' && ['debug', 'info', 'warn', 'error'].includes(x.level)),
    'level, time and msg on every line',
  );
  const config = recs.find((x) => x.config);
  t.ok(config, 'the configuration is logged at start');
  t.equal(config?.config.oauth.clientSecret, '[set]', 'the OAuth client secret shows as set');
  t.equal(config?.config.oauth.clientId, 'cairn-test-client');
  t.equal(config?.config.logLevel, 'debug');
  t.equal(config?.config.ledgerBind, '127.0.0.1:0');
  t.equal(config?.config.dataDir, dir);
  t.notMatch(node.log(), SECRET, 'the secret never appears');
  for (const f of readdirSync(join(dir, 'keys'))) {
    const hex = readFileSync(join(dir, 'keys', f), 'utf8').trim();
    t.notMatch(node.log(), hex, `the private key in ${f} never appears`);
  }
  const start = recs.find((x) => x.ports);
  t.same(start?.ports, node.ports, 'the start line carries the ports as fields');
  t.ok(startLine(node.log()), 'the start line is found in JSON');
  const given = recs.find((x) => x.msg === 'request' && x.req === 'logs-test-1');
  t.match(given, { server: 'ledger', method: 'GET', route: '/status', status: 200, ms: Number }, 'a request line with the given id');
  t.match(
    recs.find((x) => x.msg === 'request' && x.req === madeId),
    { method: 'POST', route: '/batches', status: 202 },
    'a request line with the id the node made',
  );
  t.ok(
    recs.some((x) => /^block \d+: 1 batches/.test(x.msg)),
    'the committer thread logs at the level the node was given',
  );
});

t.test('readable lines when asked (CAIRN_LOG_FORMAT=pretty); info hides request lines', async (t) => {
  const node = await startChild(tempDir(t), { CAIRN_LOG_FORMAT: 'pretty', CAIRN_OAUTH_CLIENT_SECRET: SECRET });
  t.teardown(() => node.kill9());
  await fetch(`${node.ledgerUrl}/status`);
  t.equal(await node.stop(), 0);
  const lines = node.log().split('\n').filter(Boolean);
  t.ok(lines.length > 3);
  for (const l of lines) t.match(l, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (INFO |WARN |ERROR|DEBUG) \S/, l.slice(0, 80));
  t.match(node.log(), /configuration \(secrets shown as \[set\]\) .*config\.oauth\.clientSecret=\[set\]/);
  t.notMatch(node.log(), SECRET);
  t.notMatch(node.log(), / request /, 'no request lines at info');
});

t.test('the formatter, the format choice and the configuration summary', async (t) => {
  t.equal(
    prettyLine('{"level":"warn","time":"2026-01-01T00:00:00.000Z","pid":1,"msg":"hello world","req":"a-1","n":{"x":2,"s":"two words"}}'),
    '2026-01-01T00:00:00.000Z WARN  hello world req=a-1 n.x=2 n.s="two words"\n',
  );
  t.equal(prettyLine('not json'), 'not json\n');
  t.equal(logFormat(undefined, true), 'pretty');
  t.equal(logFormat(undefined, false), 'json');
  t.equal(logFormat('auto', true), 'pretty');
  t.equal(logFormat('json', true), 'json');
  t.equal(logFormat('pretty', false), 'pretty');
  const c = describeConfig(loadConfig(['--oauth-client-secret', SECRET, '--metrics', '127.0.0.1:9464'], {}));
  t.notMatch(JSON.stringify(c), SECRET);
  t.match(c, { oauth: { clientSecret: '[set]' }, metrics: { mode: 'listen', bind: '127.0.0.1:9464' }, passwordChecks: 1 });
  t.equal((describeConfig(loadConfig([], {})).oauth as Record<string, unknown>).clientSecret, undefined, 'an unset secret stays unset');
});
