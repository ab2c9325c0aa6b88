/**
 * What a newcomer meets on a first run: command-line tools that say how to use them and
 * exit with meaningful codes, start-up errors that name the fix, a 401 that says which
 * credentials are expected (and is logged without the token), an assignment for an
 * unknown user refused.
 */
import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { log } from '../src/log.js';
import { Signer } from '../src/crypto/secp256k1.js';
import { usage } from '../src/config.js';
import { captureStderr, startApiNode, type ApiNode } from './helpers/node-api.js';
import { childEnv, nodeArgs, startChild, startLine } from './helpers/child.js';
import { killOnExit } from './helpers/procs.js';
import { freePort } from './helpers/ports.js';
import { reasons } from '../src/startup.js';

const run = promisify(execFile);
interface Out {
  code: number;
  stdout: string;
  stderr: string;
}
async function tsx(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Out> {
  const clean = { ...process.env };
  for (const k of Object.keys(clean)) if (k.startsWith('CAIRN_')) delete clean[k];
  try {
    const r = await run(process.execPath, nodeArgs(script, ...args), { env: { ...clean, ...env }, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const n: ApiNode = await startApiNode();
const tmp = mkdtempSync(join(tmpdir(), 'cairn-first-'));
t.teardown(async () => {
  await n.stop();
  rmSync(tmp, { recursive: true, force: true });
});
const ledgerBind = n.t.ledgerUrl.replace('http://', '');

t.test('intkey: --help, CAIRN_LEDGER_BIND, unreachable URL, exit codes', async (t) => {
  const help = await tsx('src/cli/intkey.ts', ['--help']);
  t.equal(help.code, 0, '--help exits 0');
  t.match(help.stdout, /usage: cairn intkey/);
  const bad = await tsx('src/cli/intkey.ts', ['frob']);
  t.equal(bad.code, 2, 'a usage error exits 2');
  const env = { CAIRN_DATA_DIR: tmp, CAIRN_LEDGER_BIND: ledgerBind };
  const set = await tsx('src/cli/intkey.ts', ['set', 'nc', '5'], env);
  t.equal(set.code, 0, `committed through CAIRN_LEDGER_BIND (${set.stderr})`);
  t.match(set.stdout, /COMMITTED/);
  const invalid = await tsx('src/cli/intkey.ts', ['dec', 'nc', '9'], env);
  t.equal(invalid.code, 1, 'an INVALID batch exits non-zero');
  t.match(invalid.stdout, /INVALID/, 'the status, and why, is the result');
  const get = await tsx('src/cli/intkey.ts', ['get', 'nc'], env);
  t.equal(get.stdout, 'nc: 5\n');
  const closed = await freePort();
  const down = await tsx('src/cli/intkey.ts', ['get', 'nc'], { CAIRN_LEDGER_BIND: `127.0.0.1:${closed}` });
  t.equal(down.code, 1);
  t.match(
    down.stderr,
    new RegExp(`cannot reach the ledger gateway at http://127\\.0\\.0\\.1:${closed}.*CAIRN_LEDGER_BIND`),
    'names the URL and the setting',
  );
  t.notMatch(down.stderr, /^intkey: fetch failed$/m);
});

t.test('token: --help prints usage, --wait waits for the key', async (t) => {
  const help = await tsx('src/cli/token.ts', ['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /usage: cairn token/);
  t.notMatch(help.stdout, /Cylinder:/, 'no token');
  const missing = await tsx('src/cli/token.ts', ['--data-dir', join(tmp, 'none'), '--wait', '1']);
  t.equal(missing.code, 2, 'a missing key file is an input error');
  t.match(missing.stderr, /admin\.priv does not exist.*waited 1 s/);
});

t.test('keygen writes a 0600 key and prints only its public key', async (t) => {
  const out = join(tmp, 'agents', 'beta.priv');
  const r = await tsx('src/cli/keygen.ts', ['--out', out]);
  t.equal(r.code, 0, r.stderr);
  const hex = readFileSync(out, 'utf8').trim();
  t.equal(r.stdout.trim(), new Signer(hex).publicKey, 'the public key of the written private key');
  t.notMatch(r.stdout + r.stderr, hex, 'the private key is not printed');
  t.equal(statSync(out).mode & 0o777, 0o600);
  const again = await tsx('src/cli/keygen.ts', ['--out', out]);
  t.equal(again.code, 2, 'never overwrites: an existing --out is an input error');
  t.equal(readFileSync(out, 'utf8').trim(), hex);
  t.equal((await tsx('src/cli/keygen.ts', [])).code, 2, '--out is required');
});

t.test('node: --help lists the log level; a port in use names the flag; the log says where the data is', async (t) => {
  t.match(usage(), /--log-level\s+CAIRN_LOG_LEVEL/);
  t.match(usage(), /--data-auth\s+CAIRN_DATA_AUTH/);
  const dir = join(tmp, 'busy');
  const r = await tsx('src/main.ts', [], {
    CAIRN_DATA_DIR: dir,
    CAIRN_LEDGER_BIND: ledgerBind,
    CAIRN_NODE_BIND: '127.0.0.1:0',
    CAIRN_DATA_BIND: '127.0.0.1:0',
    CAIRN_NETWORK_BIND: '127.0.0.1:0',
    CAIRN_COMPONENT_BIND: '127.0.0.1:0',
    CAIRN_POOL_THREADS: '1',
  });
  t.equal(r.code, 1);
  t.match(
    r.stderr,
    new RegExp(
      `cannot listen on ${ledgerBind.replace(/\./g, '\\.')} for interface ledger: the port is already in use.*--ledger-bind.*CAIRN_LEDGER_BIND`,
    ),
  );
  const lvl = await tsx('src/main.ts', ['--log-level', 'loud']);
  t.equal(lvl.code, 2);
  t.match(lvl.stderr, /log level: expected one of debug, info, warn, error, silent/);
  t.notOk(existsSync(join(dir, 'keys', 'admin.priv')), 'no keys were made: every port is tried first');
  t.notOk(existsSync(join(dir, 'ledger.mdb')), 'no genesis block either');
  t.match(r.stderr, /Nothing was written to the data directory/);
  // The component endpoint taken too: named, with the way to turn it off.
  const comp = await tsx('src/main.ts', [], {
    CAIRN_DATA_DIR: dir,
    CAIRN_LEDGER_BIND: '127.0.0.1:0',
    CAIRN_NODE_BIND: '127.0.0.1:0',
    CAIRN_DATA_BIND: '127.0.0.1:0',
    CAIRN_NETWORK_BIND: '127.0.0.1:0',
    CAIRN_COMPONENT_BIND: ledgerBind,
    CAIRN_POOL_THREADS: '1',
  });
  t.equal(comp.code, 1);
  t.match(comp.stderr, /for interface component \(transaction processors\): the port is already in use.*--component-bind.*turn it off with off/);
  t.notOk(existsSync(join(dir, 'keys', 'validator.priv')));
  // The next start on free ports is the documented first start.
  const next = await startChild(dir);
  await next.stop();
  t.match(next.log(), /data directory \S+: new; genesis block written, keys created/);
});

t.test('SIGTERM the moment the start line is out (as a supervisor may send it): a clean stop', async (t) => {
  // The handlers were set only after the start line: a signal in between ended the process by
  // the signal's default action, without closing the node. Sent from the line's own read, three
  // times (it lost the race about three times in four that way).
  for (let i = 0; i < 3; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-sigterm-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const child = spawn(process.execPath, nodeArgs('src/main.ts'), { env: childEnv(dir), stdio: ['ignore', 'ignore', 'pipe'] });
    killOnExit(child);
    let log = '';
    child.stderr.on('data', (d: Buffer) => {
      const first = !startLine(log);
      log += d.toString();
      if (first && startLine(log)) child.kill('SIGTERM');
    });
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    t.same({ code, signal }, { code: 0, signal: null }, `start ${i}: exit 0, not ended by the signal`);
    t.match(log, /SIGTERM: shutting down[\s\S]*\bstopped\b/, `start ${i}: closed, then stopped`);
  }
});

t.test('a data directory that cannot be made: one line naming --data-dir, at once', async (t) => {
  // Node's recursive mkdirSync never returns on procfs: the start spun at 100% CPU, silent.
  const r = await tsx('src/main.ts', ['--data-dir', '/proc/cairn-data'], { CAIRN_LOG_FORMAT: 'pretty' });
  t.equal(r.code, 1);
  t.match(r.stderr, /--data-dir: cannot make the data directory \/proc\/cairn-data: no such file or directory \(ENOENT\)/);
  const file = join(tmp, 'a-file');
  writeFileSync(file, 'x');
  const under = await tsx('src/main.ts', ['--data-dir', join(file, 'data')], { CAIRN_LOG_FORMAT: 'pretty' });
  t.equal(under.code, 1);
  t.match(under.stderr, /--data-dir: cannot make the data directory .*a-file\/data: a part of the path is not a directory \(ENOTDIR\)/);
});

t.test('a failed cluster start (no chain key, etcd down) leaves the data directory as it found it', async (t) => {
  const closed = await freePort();
  const env = {
    CAIRN_LEDGER_BIND: '127.0.0.1:0',
    CAIRN_NODE_BIND: '127.0.0.1:0',
    CAIRN_DATA_BIND: '127.0.0.1:0',
    CAIRN_NETWORK_BIND: '127.0.0.1:0',
    CAIRN_POOL_THREADS: '1',
    CAIRN_LOG_FORMAT: 'pretty',
    CAIRN_CLUSTER_ETCD: `http://127.0.0.1:${closed}`,
  };
  const fresh = join(tmp, 'member-new');
  const nokey = await tsx('src/main.ts', [], { ...env, CAIRN_DATA_DIR: fresh, CAIRN_CHAIN_KEY: join(tmp, 'no-chain.priv') });
  t.equal(nokey.code, 1);
  t.match(nokey.stderr, /--chain-key: the chain key file .*no-chain\.priv does not exist/);
  t.notOk(existsSync(fresh), 'a data directory that was not there is not there afterwards');
  const chainKey = join(tmp, 'chain.priv');
  writeFileSync(chainKey, `${'22'.repeat(32)}\n`);
  const down = await tsx('src/main.ts', [], { ...env, CAIRN_DATA_DIR: fresh, CAIRN_CHAIN_KEY: chainKey });
  t.equal(down.code, 1);
  t.match(
    down.stderr,
    new RegExp(
      `--cluster-etcd: the cluster's etcd at http://127\\.0\\.0\\.1:${closed} did not answer: connection refused at 127\\.0\\.0\\.1:${closed}: is etcd running there\\?`,
    ),
  );
  t.notMatch(down.stderr, /Resolution note|UNAVAILABLE/, 'no library text');
  t.notOk(existsSync(fresh), 'no ledger.mdb, pending.mdb or keys left behind');
  // A directory that was there, with a file of the operator's: kept as it was, nothing added.
  const kept = join(tmp, 'member-kept');
  mkdirSync(join(kept, 'keys'), { recursive: true });
  writeFileSync(join(kept, 'keys', 'mine.txt'), 'mine');
  const again = await tsx('src/main.ts', [], { ...env, CAIRN_DATA_DIR: kept, CAIRN_CHAIN_KEY: chainKey });
  t.equal(again.code, 1);
  t.same(readdirSync(kept), ['keys'], 'nothing added to the directory');
  t.same(readdirSync(join(kept, 'keys')), ['mine.txt'], 'nothing added to keys/, the file kept');
});

t.test('a wrapped start failure reads as one sentence', async (t) => {
  t.equal(reasons(new Error('committer failed to start: Error: cannot open x')), 'committer failed to start: cannot open x');
  t.equal(reasons(new Error('outer', { cause: new TypeError('inner') })), 'outer: inner');
  t.equal(reasons('plain'), 'plain');
});

t.test('401 says what credentials are expected, logs a line, and leaks nothing', async (t) => {
  log.setLevel('info');
  const logs = captureStderr();
  const none = await n.call('GET', '/status');
  const noPrefix = await n.call('GET', '/status', { auth: 'Bearer s3cr3t-token-value' });
  const badJwt = await n.call('GET', '/status', { auth: 'Bearer Cylinder:s3cr3t.jwt.value' });
  logs.restore();
  log.setLevel('warn');
  for (const r of [none, noPrefix, badJwt]) {
    t.equal(r.status, 401);
    t.notMatch(r.text, /s3cr3t/, 'the token is not echoed');
  }
  for (const r of [none, noPrefix])
    t.match((r.body as { message: string }).message, /Bearer Biome:.*Bearer Cylinder:.*Bearer OAuth2:/, 'names the accepted forms');
  t.match((none.body as { message: string }).message, /no Authorization header/);
  t.match((noPrefix.body as { message: string }).message, /lacks its type prefix/);
  t.match((badJwt.body as { message: string }).message, /Cylinder token is not a valid JWT/);
  t.match(logs.text(), /node: 401 on GET \/status: no Authorization header/, 'a log line');
  t.notMatch(logs.text(), /s3cr3t/, 'never the token in the log');
});

t.test('an assignment for an unknown user or a malformed key is refused', async (t) => {
  const role = await n.call('POST', '/authorization/roles', {
    auth: n.admin,
    body: { role_id: 'ops', display_name: 'Ops', permissions: ['status.read'] },
  });
  t.equal(role.status, 200);
  const nullUser = await n.call('POST', '/authorization/assignments', {
    auth: n.admin,
    body: { identity_type: 'user', identity: 'null', roles: ['ops'] },
  });
  t.equal(nullUser.status, 404, 'user "null"');
  t.match((nullUser.body as { message: string }).message, /no user with id "null"/);
  const badKey = await n.call('POST', '/authorization/assignments', {
    auth: n.admin,
    body: { identity_type: 'key', identity: 'null', roles: ['ops'] },
  });
  t.equal(badKey.status, 400, 'key "null"');
  const list = await n.call('GET', '/authorization/assignments', { auth: n.admin });
  t.same((list.body as { data: unknown[] }).data, [], 'nothing stored');
});
