/**
 * The `cairn` command's contract (docs/cli.md), command by command, against one real node:
 * exit 0 done, 1 the operation failed, 2 a usage or input error found before any work (no
 * connection made, nothing written); `--json` prints one JSON document on stdout (the result,
 * or `{"error", "exit"}`) and nothing on stderr; `--quiet` prints the result and nothing
 * else; an error is one line that names the flag or the thing to fix, never a stack trace; a
 * server that does not answer is given up after the deadline, which the message names. Most
 * commands run in this process (what a process would print and exit with); a few are spawned
 * as a user runs them. At the end the node stops and `cairn check` finds its data clean.
 */
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { decode } from '../src/codec/cbor.js';
import { intkeyAddress, intkeyPayload } from '../src/families/intkey.js';
import { Signer } from '../src/crypto/secp256k1.js';
import { startTestNode } from './helpers/node.js';
import { nodeArgs as entryArgs } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, getJson } from './helpers/batches.js';
import { TestProcessor, tallyAddress } from './helpers/processor.js';
import { COMMAND_NAMES, run, runCommand, USAGE, wantsJson } from '../src/cli/cairn.js';
import { defaultNodeId } from '../src/node-api/status.js';
import { etcdReason } from '../src/cluster/etcd.js';
import { BrokenCircuitError } from 'cockatiel';
// @ts-expect-error: a script of the package, without types
import { distCurrent } from '../scripts/build-state.mjs';

const exec = promisify(execFile);

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a process to its end with no CAIRN_ variables but `env`. */
async function runProcess(args: string[], env: NodeJS.ProcessEnv = {}, strip = false): Promise<Out> {
  const clean = { ...process.env };
  for (const k of Object.keys(clean))
    if (k.startsWith('CAIRN_') || (strip && (k.startsWith('TAP') || k.startsWith('_TAPJS') || k === 'NODE_OPTIONS' || k === 'NODE_V8_COVERAGE')))
      delete clean[k];
  try {
    const r = await exec(process.execPath, args, { env: { ...clean, ...env }, timeout: 120_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** `cairn …` from the sources, compiled as the tests are. */
const cairn = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Out> => runProcess(entryArgs('src/cli/cairn.ts', ...args), env);

function noStack(t: Test, r: Out): void {
  t.notMatch(r.stdout + r.stderr, /\n\s+at .+:\d+:\d+/, 'no stack trace');
}

/** A TCP server that counts the connections it gets and never answers: a server a command must not ask, or one that falls silent. */
async function listener(): Promise<{ url: string; port: number; connections: () => number; close: () => Promise<void> }> {
  let n = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    n++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    connections: () => n,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

// With a transaction processor endpoint: `cairn check` must know the families a processor ran.
const tn = await startTestNode({ CAIRN_COMPONENT_BIND: '127.0.0.1:0' });
const tmp = mkdtempSync(join(tmpdir(), 'cairn-cli-'));
const untouched = await listener();
const silent = await listener();
t.teardown(async () => {
  await tn.stop();
  await untouched.close();
  await silent.close();
  rmSync(tmp, { recursive: true, force: true });
});
const url = ['--url', tn.ledgerUrl];
const keyArgs = ['--data-dir', tmp];
const adminKey = join(tn.dataDir, 'keys', 'admin.priv');
const nodeArgs = ['--url', tn.nodeUrl, '--key', adminKey];

/** The intkey value of `name` in the node's state, read over HTTP. */
async function stateValue(name: string): Promise<number | undefined> {
  const r = await getJson(`${tn.ledgerUrl}/state/${intkeyAddress(name)}`);
  if (r.status !== 200) return undefined;
  return (decode(Buffer.from(r.json.data, 'base64')) as Map<string, number>).get(name);
}

/** `cairn …` run in this process (fast; what a process would print and exit with). */
async function inProcess(args: string[]): Promise<Out> {
  let stdout = '';
  let stderr = '';
  const out = process.stdout.write;
  const err = process.stderr.write;
  const exitCode = process.exitCode;
  process.stdout.write = ((c: string | Uint8Array) => {
    stdout += String(c);
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((c: string | Uint8Array) => {
    stderr += String(c);
    return true;
  }) as typeof process.stderr.write;
  try {
    const code = await runCommand('cairn', USAGE, () => run(args), wantsJson(args));
    return { code, stdout, stderr };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    process.exitCode = exitCode;
  }
}

/** A `--json` run: one JSON document on stdout, nothing on stderr; the document. */
function oneDocument(t: Test, r: Out, what: string): Record<string, unknown> & unknown[] {
  t.equal(r.stderr, '', `${what}: nothing on stderr`);
  t.equal(r.stdout.trimEnd().split('\n').length, 1, `${what}: one line on stdout`);
  let doc: unknown;
  t.doesNotThrow(() => {
    doc = JSON.parse(r.stdout);
  }, `${what}: stdout parses as JSON`);
  return doc as Record<string, unknown> & unknown[];
}

t.test('cairn: help, unknown and missing commands', async (t) => {
  const help = await cairn(['--help']);
  t.equal(help.code, 0);
  for (const c of COMMAND_NAMES) t.match(help.stdout, new RegExp(`^  ${c} `, 'm'), `${c} is listed`);
  t.match(help.stdout, /^ {2}batch +build, submit/m, 'the batch line names build');
  t.match(help.stdout, /--json .*--quiet .*--timeout SECONDS/s, 'the common options');
  const none = await cairn([]);
  t.equal(none.code, 2);
  t.equal(none.stderr, 'cairn: missing command (cairn --help shows the usage)\n');
  const bad = await inProcess(['frob']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /^cairn: unknown command frob \(start, keygen, .*cluster\) \(cairn --help shows the usage\)\n$/);
  const json = await inProcess(['frob', '--json']);
  t.match(oneDocument(t, json, 'frob --json'), { error: /^unknown command frob/, exit: 2 });
});

t.test('every command: --help says what it does; an unknown option is one line naming it, exit 2; with --json an error document', async (t) => {
  for (const c of COMMAND_NAMES) {
    // start runs the node in this process: only its help here (its refusal is spawned below).
    const help = await inProcess([c, '--help']);
    t.equal(help.code, 0, `${c} --help exits 0`);
    t.match(help.stdout, new RegExp(`^usage: cairn ${c} `), `${c} --help: usage: cairn ${c} …`);
    t.match(help.stdout, /^[A-Z][a-z]+s[ ,][^\n]+/m, `${c} --help says what the command does`);
    t.equal(help.stderr, '');
    if (c === 'start') continue;
    t.match(help.stdout, /exit status: 0 .*2 usage/s, `${c} --help states its exit status`);
    const bad = await inProcess([c, '--frob']);
    t.equal(bad.code, 2, `${c} --frob exits 2`);
    t.equal(bad.stderr, `cairn ${c}: unknown option --frob (cairn ${c} --help shows the usage)\n`);
    t.equal(bad.stdout, '');
    const json = await inProcess([c, '--frob', '--json']);
    t.equal(json.code, 2);
    t.same(oneDocument(t, json, `${c} --frob --json`), { error: 'unknown option --frob', exit: 2 }, `${c} --json: the error as the JSON document`);
    const quiet = await inProcess([c, '--frob', '--quiet']);
    t.equal(quiet.code, 2, `${c} --quiet takes --quiet`);
    t.equal(quiet.stderr, bad.stderr, `${c} --quiet: an error is still said`);
  }
  const start = await cairn(['start', '--frob']);
  t.equal(start.code, 2);
  t.equal(start.stderr, 'cairn start: unknown option --frob (cairn start --help shows the options)\n');
});

t.test('usage and input errors exit 2 before any work: no server asked, nothing written', async (t) => {
  const U = untouched.url;
  const garbageKey = join(tmp, 'garbage.priv');
  writeFileSync(garbageKey, 'not a key\n');
  const empty = join(tmp, 'empty-dir');
  mkdirSync(empty, { recursive: true });
  const good = join(tmp, 'good.batches');
  writeFileSync(good, batchList(intkeyBatch(newSigner(), [['set', 'never-sent', 1]])));
  const single = join(tmp, 'single.json');
  writeFileSync(single, JSON.stringify({ committedBatchesPerSec: 5 }));
  const existing = join(tmp, 'existing.priv');
  writeFileSync(existing, `${'11'.repeat(32)}\n`);
  const missing = join(tmp, 'missing');
  const cases: Array<[string[], RegExp]> = [
    // intkey
    [['intkey', 'set', 'x', 'ten', '--url', U], /set needs a whole number value, got "ten"/],
    [['intkey', 'set', 'x'.repeat(21), '1', '--url', U], /name "x{21}" has 21 characters; intkey takes at most 20/],
    [['intkey', 'set', 'x', '99999999999', '--url', U], /over intkey's limit/],
    [['intkey', 'set', 'x', '1', '--wait', 'soon', '--url', U], /--wait takes whole seconds, got "soon"/],
    [['intkey', 'set', 'x', '1', '--timeout', '0', '--url', U], /--timeout takes whole seconds, at least 1/],
    [['intkey', 'set', 'x', '1', '--key', garbageKey, '--url', U], /--key: cannot use .*garbage\.priv: it does not hold a secp256k1 private key/],
    [['intkey', 'show', 'x', '--url'], /--url needs a value/],
    [['intkey', 'show', 'x', '--url', 'localhost:8008'], /--url: expected an http:\/\/ or https:\/\/ URL, got "localhost:8008"/],
    [['intkey', 'frob', '--url', U], /unknown verb frob \(set, inc, dec, show, list\)/],
    // batch
    [['batch', 'submit', good, missing, '--url', U], /submit: cannot read .*missing: no such file or directory \(ENOENT\)/],
    [['batch', 'status', 'abc', '--url', U], /not a batch id \(128 hex digits\): abc/],
    [['batch', 'list', '--limit', '0', '--url', U], /--limit takes a number from 1 to 9999/],
    [['batch', 'list', '--url', 'http://'], /--url: not a URL: "http:\/\/"/],
    [['batch', 'frob'], /unknown subcommand frob \(submit, status, list, build\)/],
    [['batch', 'build', 'intkey', 'set', 'x', '1', '--out', join(missing, 'f')], /--out: cannot write .*f: the directory .*missing does not exist/],
    [['batch', 'build', 'intkey', 'set', 'x', '1', '--out', join(tmp, 'f'), '--url', U], /--url is not an option of batch build/],
    [
      ['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--payload-file', missing, '--out', join(tmp, 'f')],
      /--payload-file: cannot read .*missing: no such file/,
    ],
    // circuit
    [['circuit', 'frob'], /unknown subcommand frob \(propose, vote/],
    [['circuit', 'list', '--key', missing, '--url', U], /--key: cannot read .*missing: no such file or directory/],
    [['circuit', 'list', '--key', garbageKey, '--url', U], /--key: .*garbage\.priv does not hold a secp256k1 private key/],
    [['circuit', 'list', 'frob', '--key', adminKey, '--url', U], /list takes circuits or proposals, got "frob"/],
    [['circuit', 'list', '--status', 'x', '--key', adminKey, '--url', U], /--status takes disbanded or abandoned/],
    [['circuit', 'show', 'circuit', '--key', adminKey, '--url', U], /show needs circuit\|proposal and an id/],
    [['circuit', 'vote', '--node-id', 'a', '--circuit-id', 'x', '--key', adminKey, '--url', U], /exactly one of --accept and --reject/],
    [['circuit', 'vote', '--circuit-id', 'x', '--accept', '--key', adminKey, '--url', U], /--node-id is required/],
    [['circuit', 'propose', '--node-id', 'a', '--member', 'x', '--key', adminKey, '--url', U], /--member takes ID=ENDPOINT/],
    [['circuit', 'propose', '--auth-type', 'x', '--key', adminKey, '--url', U], /--auth-type takes trust or challenge/],
    [['circuit', 'sabre-setup', '--circuit-id', 'c', '--key', adminKey, '--url', U], /--service is required/],
    // alarm
    [
      ['alarm', 'clear', '--kind', 'BOGUS', '--url', U, '--data-dir', tn.dataDir],
      /--kind takes one of NOSPACE, IO, STALLED, CORRUPT, COMMITTER, DIVERGED, got "BOGUS"/,
    ],
    [['alarm', 'list', '--kind', 'IO', '--url', U, '--data-dir', tn.dataDir], /--kind is an option of alarm clear/],
    [['alarm', 'list', '--url', U, '--data-dir', empty], /--data-dir \(the node's admin key\): cannot read .*admin\.priv: no such file/],
    [['alarm', 'frob'], /unknown subcommand frob \(list, clear\)/],
    // token, keygen
    [['token', '--data-dir', empty], /admin\.priv does not exist: name the node's data directory with --data-dir/],
    [['token', '--wait', 'x'], /--wait takes whole seconds/],
    [['token', 'extra'], /unexpected argument extra/],
    [['keygen', '--out', existing], /--out: .*existing\.priv exists \(keys are never overwritten\)/],
    [['keygen', 'extra', '--out', join(tmp, 'k')], /unexpected argument extra/],
    [['keygen'], /--out FILE is required/],
    // check, prune
    [['check', '--data-dir', missing], /--data-dir: no data directory at .*missing/],
    [['check', 'extra'], /unexpected argument extra/],
    [['prune', '--data-dir', tmp], /--keep N is required/],
    [['prune', '--keep', '0', '--data-dir', tmp], /--keep takes a whole number of blocks, at least 1/],
    [['prune', '--keep', '1', '--data-dir', missing], /--data-dir: no data directory/],
    // bench
    [['bench', '--url', U, '--html', join(missing, 'x.html')], /--html: cannot write .*x\.html: the directory .*missing does not exist/],
    [['bench', '--url', U, '--json', join(missing, 'x.json')], /--json: cannot write/],
    [['bench', '--url', U, '--json', join(tmp, 'x.json'), '--json', join(tmp, 'y.json')], /--json is given twice/],
    [['bench', '--url', U, '--payloads', missing], /--payloads: cannot read the payload file .*missing: no such file/],
    [['bench', '--url', U, '--repeat', '2', '--baseline', single], /--baseline: .*single\.json holds 1 run: a comparison needs repeated runs/],
    [['bench', '--url', U, '--batches', 'abc'], /--batches takes a whole number, got "abc"/],
    [['bench', 'compare', missing, single], /compare: cannot read the report .*missing: no such file/],
    [['bench', 'compare', single, single], /compare: .*single\.json holds 1 run/],
    [['bench', 'compare', single], /compare needs two reports/],
    // cluster
    [['cluster', 'status', '--etcd', U, '--cluster-etcd-ca', missing], /--cluster-etcd-ca: cannot read .*missing: no such file/],
    [
      ['cluster', 'status', '--etcd', U, '--cluster-etcd-ca', good],
      /etcd's TLS needs all of --cluster-etcd-ca, --cluster-etcd-cert and --cluster-etcd-key/,
    ],
    [
      ['cluster', 'join', '--etcd', U, '--chain-key', missing, '--data-dir', join(tmp, 'j')],
      /--chain-key: .*missing does not exist: copy the chain key/,
    ],
    [
      ['cluster', 'init', '--etcd', U, '--chain-key', join(missing, 'chain.priv')],
      /--chain-key: cannot write .*chain\.priv: the directory .*missing does not exist/,
    ],
    [['cluster', 'remove', '--etcd', U, '--chain-key', existing], /remove takes --node-id ID or --key PUBLIC_KEY/],
    [['cluster', 'init', '--etcd', U, '--chain-key', existing, '--verify', 'some'], /--verify takes trust or all/],
    [['cluster', 'frob', '--etcd', U], /unknown subcommand frob \(init, status, join or remove\)/],
    [['cluster', 'status', '--etcd', 'etcd:2379'], /--etcd: etcd endpoint "etcd:2379": expected http:\/\/ or https:\/\//],
  ];
  for (const [args, message] of cases) {
    const what = args.join(' ');
    const r = await inProcess(args);
    t.equal(r.code, 2, `${what}: exit 2`);
    t.match(r.stderr, new RegExp(`^cairn ${args[0]}: `), `${what}: the command's name first`);
    t.match(r.stderr, message, `${what}: ${r.stderr.trim()}`);
    t.equal(r.stderr.split('\n').length, 2, `${what}: one line`);
    t.equal(r.stdout, '', `${what}: nothing on stdout`);
    noStack(t, r);
    if (args.includes('--json')) continue;
    const j = await inProcess([...args, '--json']);
    t.equal(j.code, 2, `${what} --json: exit 2`);
    t.match(oneDocument(t, j, `${what} --json`), { error: message, exit: 2 });
  }
  // An option's value may not be the next option: --json is the switch here, and the error its document.
  const json = await inProcess(['intkey', 'show', 'x', '--url', '--json']);
  t.equal(json.code, 2);
  t.match(oneDocument(t, json, 'intkey show x --url --json'), { error: '--url needs a value', exit: 2 });
  t.equal(untouched.connections(), 0, 'no command connected to the server it was given');
  t.notOk(existsSync(join(tmp, 'f')), 'no BatchList written');
  t.notOk(existsSync(join(tmp, 'j')), 'no data directory made by a refused join');
  t.equal(await stateValue('never-sent'), undefined, 'the first file of a refused submit was not sent');
});

t.test('a server that does not answer: given up after the deadline, which the error names', async (t) => {
  const S = silent.url;
  const cases: Array<[string[], RegExp]> = [
    [
      ['intkey', 'show', 'x', '--url', S, '--timeout', '1'],
      /the ledger gateway at http:\/\/127\.0\.0\.1:\d+ did not answer within 1 s \(--timeout SECONDS waits longer\)/,
    ],
    [['batch', 'list', '--url', S, '--timeout', '1'], /the ledger gateway at .* did not answer within 1 s/],
    [['circuit', 'list', '--url', S, '--key', adminKey, '--timeout', '1'], /the node API at .* did not answer within 1 s/],
    [['alarm', 'list', '--url', S, '--data-dir', tn.dataDir, '--timeout', '1'], /the node API at .* did not answer within 1 s/],
    [
      ['cluster', 'status', '--etcd', S, '--timeout', '1'],
      /etcd at http:\/\/127\.0\.0\.1:\d+ did not answer within 1 s|etcd at .*: no answer within/,
    ],
  ];
  for (const [args, message] of cases) {
    const r = await inProcess(args);
    t.equal(r.code, 1, `${args.join(' ')}: exit 1`);
    t.match(r.stderr, message, r.stderr.trim());
    t.equal(r.stdout, '');
  }
  t.ok(silent.connections() >= cases.length, 'each command reached the server');
  // An address nothing listens on: refused at once, said in words, with the flags that point the tool elsewhere.
  const down = await listener();
  await down.close();
  const refused: Array<[string[], RegExp]> = [
    [
      ['intkey', 'show', 'x', '--url', down.url],
      /cannot reach the ledger gateway at .* \(connection refused, ECONNREFUSED\)\. Is the node running\? .*--url/,
    ],
    [
      ['circuit', 'list', '--url', down.url, '--key', adminKey],
      /cannot reach the node API at .* \(connection refused, ECONNREFUSED\).*CAIRN_NODE_URL/,
    ],
    [['cluster', 'status', '--etcd', down.url], /etcd at .*: connection refused at 127\.0\.0\.1:\d+: is etcd running there\? \(--etcd URL/],
  ];
  for (const [args, message] of refused) {
    const r = await inProcess(args);
    t.equal(r.code, 1, `${args.join(' ')}: exit 1`);
    t.match(r.stderr, message, r.stderr.trim());
    t.notMatch(r.stderr, /Resolution note|UNAVAILABLE|fetch failed/, 'no library text');
    const j = await inProcess([...args, '--json']);
    t.match(oneDocument(t, j, `${args.join(' ')} --json`), { error: message, exit: 1 });
  }
});

t.test('cairn intkey set|inc|dec|show|list against the node; --json and --quiet', async (t) => {
  const set = await cairn(['intkey', 'set', 'cli-a', '5', ...url, ...keyArgs]);
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, /^set cli-a 5: batch [0-9a-f]{128} COMMITTED\n$/);
  t.equal(set.stderr, '');
  t.equal(await stateValue('cli-a'), 5, 'the node holds the value');
  const inc = await inProcess(['intkey', 'inc', 'cli-a', '3', '--json', ...url, ...keyArgs]);
  t.equal(inc.code, 0, inc.stderr);
  const incJson = oneDocument(t, inc, 'intkey inc --json');
  t.match(incJson, { verb: 'inc', name: 'cli-a', value: 3, status: 'COMMITTED', batch_id: /^[0-9a-f]{128}$/ });
  t.equal((await getJson(`${tn.ledgerUrl}/batch_statuses?id=${incJson.batch_id}`)).json.data[0].status, 'COMMITTED');
  t.equal(await stateValue('cli-a'), 8);
  t.equal((await inProcess(['intkey', 'set', 'cli-b', '1', ...url, ...keyArgs])).code, 0);
  const dec = await inProcess(['intkey', 'dec', 'cli-b', '1', '--quiet', ...url, ...keyArgs]);
  t.equal(dec.code, 0, dec.stderr);
  t.match(dec.stdout, /^dec cli-b 1: batch [0-9a-f]{128} COMMITTED\n$/, '--quiet: the result');
  t.equal(dec.stderr, '', '--quiet: nothing else');
  t.equal(await stateValue('cli-b'), 0);
  const under = await inProcess(['intkey', 'dec', 'cli-b', '4', ...url, ...keyArgs]);
  t.equal(under.code, 1, 'an INVALID batch exits 1');
  t.match(under.stdout, /^dec cli-b 4: batch [0-9a-f]{128} INVALID: .+\n$/, 'the status and why, as the result');
  t.equal(under.stderr, '');
  const underJson = await inProcess(['intkey', 'dec', 'cli-b', '4', '--json', ...url, ...keyArgs]);
  t.equal(underJson.code, 1);
  t.match(oneDocument(t, underJson, 'INVALID --json'), { status: 'INVALID', invalid_transactions: [{ message: /.+/ }] }, 'no stray line on stderr');
  t.equal(await stateValue('cli-b'), 0, 'the invalid batch changed nothing');

  t.equal((await inProcess(['intkey', 'show', 'cli-a', ...url])).stdout, 'cli-a: 8\n');
  const show = await inProcess(['intkey', 'show', 'cli-a', '--json', ...url]);
  t.same(oneDocument(t, show, 'show --json'), { name: 'cli-a', value: 8 });
  t.equal((await inProcess(['intkey', 'get', 'cli-a', '--quiet', ...url])).stdout, 'cli-a: 8\n', 'get is show');
  const missing = await inProcess(['intkey', 'show', 'never-set', ...url]);
  t.equal(missing.code, 1);
  t.equal(missing.stderr, 'cairn intkey: never-set: not set\n');
  const list = await inProcess(['intkey', 'list', '--json', ...url]);
  t.equal(list.code, 0, list.stderr);
  t.same(
    (oneDocument(t, list, 'list --json') as unknown as Array<{ name: string }>).filter((e) => e.name.startsWith('cli-')),
    [
      { name: 'cli-a', value: 8 },
      { name: 'cli-b', value: 0 },
    ],
  );
  t.match((await inProcess(['intkey', 'list', ...url])).stdout, /^cli-a: 8\ncli-b: 0$/m);
});

t.test('cairn batch submit|status|list|build; --json and --quiet', async (t) => {
  const signer = newSigner();
  const b1 = intkeyBatch(signer, [['set', 'cli-batch', 11]]);
  const b2 = intkeyBatch(signer, [['inc', 'cli-batch', 1]]);
  const file = join(tmp, 'two.batches');
  writeFileSync(file, batchList(b1, b2));
  const sub = await inProcess(['batch', 'submit', file, '--json', ...url]);
  t.equal(sub.code, 0, sub.stderr);
  t.same(
    (oneDocument(t, sub, 'submit --json') as unknown as Array<{ id: string; status: string }>).map((s) => [s.id, s.status]),
    [
      [b1.id, 'COMMITTED'],
      [b2.id, 'COMMITTED'],
    ],
  );
  t.equal(await stateValue('cli-batch'), 12, 'both batches took effect');
  const st = await inProcess(['batch', 'status', b1.id, '--quiet', ...url]);
  t.equal(st.code, 0);
  t.equal(st.stdout, `${b1.id} COMMITTED\n`);
  t.equal(st.stderr, '');
  const unknown = 'ab'.repeat(64);
  t.match(oneDocument(t, await inProcess(['batch', 'status', unknown, '--json', ...url]), 'status --json'), [{ id: unknown, status: 'UNKNOWN' }]);
  const list = await inProcess(['batch', 'list', '--limit', '5', '--json', ...url]);
  t.equal(list.code, 0, list.stderr);
  const rows = oneDocument(t, list, 'list --json') as unknown as Array<{ id: string; families: string[]; signer: string }>;
  t.match(
    rows.find((r) => r.id === b2.id),
    { families: ['intkey'], signer: signer.publicKey },
    'the latest batches include ours',
  );
  t.match((await inProcess(['batch', 'list', ...url])).stdout, new RegExp(`^${b2.id} 1 txn intkey signer`, 'm'));

  const garbage = join(tmp, 'garbage.batches');
  writeFileSync(garbage, 'not a batch list');
  const refused = await cairn(['batch', 'submit', garbage, ...url]);
  t.equal(refused.code, 1, 'a file the gateway refuses: the operation failed');
  t.match(refused.stderr, /^cairn batch: .*garbage\.batches: batch refused: /);
  noStack(t, refused);

  // build: signed BatchList files that submit and commit.
  const key = join(tmp, 'builder.priv');
  const built = join(tmp, 'built.batches');
  const b = await inProcess([
    ...'batch build intkey set cli-build 7 inc cli-build 2 set cli-build2 1 --per-batch 2 --json'.split(' '),
    ...['--key', key, '--out', built],
  ]);
  t.equal(b.code, 0, b.stderr);
  const meta = oneDocument(t, b, 'build --json') as unknown as { file: string; signer: string; transactions: number; batches: string[] };
  t.equal(meta.transactions, 3);
  t.equal(meta.batches.length, 2, 'two per batch: two batches in one file');
  t.equal(meta.signer, new Signer(readFileSync(key, 'utf8').trim()).publicKey, 'signed with the key file');
  const sb = await inProcess(['batch', 'submit', built, '--quiet', ...url]);
  t.equal(sb.code, 0, sb.stderr);
  t.equal(sb.stdout, meta.batches.map((id) => `${id} COMMITTED\n`).join(''));
  t.equal(await stateValue('cli-build'), 9);
  t.equal(await stateValue('cli-build2'), 1);

  // Raw payloads for a named family, version, inputs and outputs: here intkey's own CBOR.
  const payload = join(tmp, 'payload.cbor');
  writeFileSync(payload, intkeyPayload('inc', 'cli-build', 1));
  const address = intkeyAddress('cli-build');
  const raw = join(tmp, 'raw.batches');
  const r = await inProcess([
    ...`batch build raw --family intkey --version 1.0 --input ${address} --output ${address} --repeat 2`.split(' '),
    ...['--payload-file', payload, '--payload', intkeyPayload('inc', 'cli-build', 10).toString('hex'), '--key', key, '--out', raw],
  ]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, new RegExp(`^wrote .*raw\\.batches: 4 batches, 4 transactions, signed by ${meta.signer}\\n$`));
  t.equal((await inProcess(['batch', 'submit', raw, ...url])).code, 0);
  t.equal(await stateValue('cli-build'), 9 + 2 * 11, 'each payload twice, each with its own nonce');

  const cases: Array<[string[], RegExp]> = [
    [['batch', 'build', 'intkey', 'set', 'x', '1'], /build needs --out FILE/],
    [['batch', 'build', '--out', built], /build needs a kind: intkey or raw/],
    [['batch', 'build', 'frob', '--out', built], /unknown kind frob/],
    [['batch', 'build', 'intkey', 'set', 'x', '--out', built], /VERB NAME VALUE triples/],
    [['batch', 'build', 'intkey', 'mul', 'x', '1', '--out', built], /unknown verb mul/],
    [['batch', 'build', 'intkey', 'set', 'x', '-1', '--out', built], /whole number from 0 to 4294967295/],
    [['batch', 'build', 'intkey', 'set', 'x', '1', '--per-batch', '0', '--out', built], /--per-batch takes a whole number from 1 to 1000/],
    [['batch', 'build', 'intkey', 'set', 'x', '1', 'set', 'y', '1', '--repeat', '60000', '--out', built], /at most 100000 transactions per file/],
    [['batch', 'build', 'raw', '--version', '1', '--payload', 'aa', '--out', built], /build raw needs --family/],
    [['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--out', built], /at least one --payload HEX or --payload-file FILE/],
    [['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--payload', 'xyz', '--out', built], /--payload takes hex bytes, got "xyz"/],
    [['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--input', 'abc', '--payload', 'aa', '--out', built], /--input: not an address/],
    [['batch', 'build', 'intkey', 'set', 'x', '1', '--key', built, '--out', built], /--key: cannot use .*built\.batches/],
    [['batch', 'list', '--out', built], /--out is an option of batch build/],
  ];
  for (const [args, message] of cases) {
    const res = await inProcess(args);
    t.equal(res.code, 2, `${args.join(' ')}: exit 2`);
    t.match(res.stderr, message, args.join(' '));
  }
});

t.test('cairn token, keygen, circuit and alarm: --json and --quiet', async (t) => {
  const tok = await inProcess(['token', '--json', '--data-dir', tn.dataDir]);
  t.equal(tok.code, 0, tok.stderr);
  const { token } = oneDocument(t, tok, 'token --json') as unknown as { token: string };
  t.match(token, /^Cylinder:[\w+/=-]+\.[\w+/=-]+\.[\w+/=-]+$/);
  const circuits = await fetch(`${tn.nodeUrl}/admin/circuits`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(circuits.status, 200, 'the token is accepted by the node');
  // No --node-id: the id is made from the node key, as `cairn cluster join` names a node it registers.
  const status = (await (await fetch(`${tn.nodeUrl}/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as { node_id: string };
  t.equal(status.node_id, defaultNodeId(tn.node.nodeSigner.publicKey), "the node's id, from its key");
  const quietToken = await inProcess(['token', '--quiet', '--data-dir', tn.dataDir]);
  t.match(quietToken.stdout, /^Cylinder:\S+\n$/);
  t.equal(quietToken.stderr, '');

  const out = join(tmp, 'keys', 'agent.priv');
  const kg = await inProcess(['keygen', '--out', out, '--json']);
  t.equal(kg.code, 0, kg.stderr);
  const hex = readFileSync(out, 'utf8').trim();
  t.same(oneDocument(t, kg, 'keygen --json'), { public_key: new Signer(hex).publicKey, file: out });
  t.notMatch(kg.stdout, hex, 'the private key is not printed');
  const kq = await inProcess(['keygen', '--out', join(tmp, 'keys', 'q.priv'), '--quiet']);
  t.match(kq.stdout, /^0[23][0-9a-f]{64}\n$/, '--quiet: the public key');
  t.equal(kq.stderr, '');

  const list = await inProcess(['circuit', 'list', '--json', ...nodeArgs]);
  t.equal(list.code, 0, list.stderr);
  t.match(oneDocument(t, list, 'circuit list --json'), { status: 200, body: { data: [] } });
  const plain = await inProcess(['circuit', 'list', 'proposals', '--quiet', ...nodeArgs]);
  t.equal(plain.stdout, 'no proposals\n', 'text: a line per item, or none');
  t.equal(plain.stderr, '');
  const show = await inProcess(['circuit', 'show', 'circuit', 'nope', ...nodeArgs]);
  t.equal(show.code, 1);
  t.equal(show.stdout, '');
  t.match(show.stderr, /^cairn circuit: circuit nope: the node API answered 404: .+\n$/, 'the node message, not raw JSON');
  t.notMatch(show.stderr, /\{"message"/);
  const showJson = await inProcess(['circuit', 'show', 'proposal', 'abcde-12345', '--json', ...nodeArgs]);
  t.equal(showJson.code, 1);
  t.match(oneDocument(t, showJson, 'show --json'), { error: /answered 404/, exit: 1, status: 404, body: { message: /Unable to find proposal/ } });
  // A vote sent to a node that does not know the voter's key: what to do instead.
  const stranger = join(tmp, 'stranger.priv');
  t.equal((await inProcess(['keygen', '--out', stranger])).code, 0);
  const vote = await inProcess([
    'circuit',
    'vote',
    '--node-id',
    'beta',
    '--circuit-id',
    'abcde-12345',
    '--accept',
    '--key',
    stranger,
    '--url',
    tn.nodeUrl,
  ]);
  t.equal(vote.code, 1);
  t.match(vote.stderr, /does not let this key read proposals .*A vote goes to the voter's own node: --url of node beta's node API/);

  const alarms = await inProcess(['alarm', 'list', '--json', '--url', tn.nodeUrl, '--data-dir', tn.dataDir]);
  t.equal(alarms.code, 0, alarms.stderr);
  t.same(oneDocument(t, alarms, 'alarm list --json'), { alarms: [] });
  const quiet = await inProcess(['alarm', 'clear', '--kind', 'DIVERGED', '--quiet', '--url', tn.nodeUrl, '--data-dir', tn.dataDir]);
  t.equal(quiet.code, 0, quiet.stderr);
  t.equal(quiet.stdout, 'no alarm to clear\n', 'every kind the node raises is taken, DIVERGED too');
  t.equal(quiet.stderr, '');
});

t.test('cairn bench: --json FILE writes the report, --json - and a bare --json print it, --quiet prints only the summary', async (t) => {
  const load = ['bench', '--url', tn.ledgerUrl, '--batches', '10', '--connections', '2', '--signers', '2', '--workers', '1'];
  const file = join(tmp, 'bench.json');
  const q = await inProcess([...load, '--quiet', '--json', file]);
  t.equal(q.code, 0, q.stderr);
  t.equal(q.stderr, '', '--quiet: no progress and no notes');
  t.match(q.stdout, /committed/, 'the summary');
  t.match(JSON.parse(readFileSync(file, 'utf8')), { tool: 'cairn bench', committed: 10 }, '--json FILE: the report in FILE');
  const bare = await inProcess([...load, '--json']);
  t.equal(bare.code, 0, bare.stderr);
  t.match(oneDocument(t, bare, 'bench --json'), { tool: 'cairn bench', committed: 10 }, 'a bare --json last: the report on stdout');
  const dash = await inProcess(['bench', '--json', '-', ...load.slice(1), '--repeat', '2', '--baseline', join(tmp, 'two.json')]);
  t.equal(dash.code, 2, 'a missing baseline: an input error, before the load');
  const a = join(tmp, 'a.json');
  const b = join(tmp, 'b.json');
  writeFileSync(a, JSON.stringify({ runs: [100, 101, 99].map((r) => ({ committedBatchesPerSec: r })) }));
  writeFileSync(b, JSON.stringify({ runs: [70, 71, 69].map((r) => ({ committedBatchesPerSec: r })) }));
  const cmp = await inProcess(['bench', 'compare', a, b, '--json']);
  t.equal(cmp.code, 1, 'B is slower: exit 1');
  t.match(oneDocument(t, cmp, 'compare --json'), { verdict: 'slower' });
  const same = await inProcess(['bench', 'compare', a, a, '--quiet']);
  t.equal(same.code, 0);
  t.match(same.stdout, /: no difference\n$/);
  t.equal(same.stderr, '');
});

t.test('cairn cluster: etcd that cannot be reached is an error in our words, --json too', async (t) => {
  const down = await listener();
  await down.close();
  const r = await inProcess(['cluster', 'status', '--etcd', down.url, '--json']);
  t.equal(r.code, 1);
  const doc = oneDocument(t, r, 'cluster status --json');
  t.match(doc, { error: /connection refused at 127\.0\.0\.1:\d+: is etcd running there\?/, exit: 1 });
  t.notMatch(String(doc.error), /Resolution note|14 UNAVAILABLE/);
});

t.test('batches of families run by a transaction processor, and of one no processor serves (exit 3: still pending)', async (t) => {
  const tp = new TestProcessor(tn.node.ledger.componentEndpoint as string);
  t.teardown(() => tp.close());
  t.equal(await tp.start(), 1, 'the processor registered');
  const address = tallyAddress('k');
  const tally = join(tmp, 'tally.batches');
  const build = ['batch', 'build', 'raw', '--family', 'tally', '--version', '1.0', '--input', address, '--output', address];
  const payload = Buffer.from(JSON.stringify({ op: 'add', key: 'k', n: 2 })).toString('hex');
  t.equal((await inProcess([...build, '--payload', payload, '--repeat', '2', '--key', join(tmp, 'builder.priv'), '--out', tally])).code, 0);
  const done = await inProcess(['batch', 'submit', tally, '--quiet', ...url]);
  t.equal(done.code, 0, done.stdout + done.stderr);
  t.match(done.stdout, /^[0-9a-f]{128} COMMITTED\n[0-9a-f]{128} COMMITTED\n$/);
  const nobody = join(tmp, 'nobody.batches');
  const other = ['batch', 'build', 'raw', '--family', 'nobody', '--version', '2.0', '--input', address.slice(0, 6), '--output', address.slice(0, 6)];
  t.equal((await inProcess([...other, '--payload', 'aa', '--key', join(tmp, 'builder.priv'), '--out', nobody])).code, 0);
  const waiting = await inProcess(['batch', 'submit', nobody, '--wait', '0', ...url]);
  t.equal(waiting.code, 3, 'still pending: exit 3');
  t.match(waiting.stdout, /^[0-9a-f]{128} PENDING\n$/);
});

t.test("etcd's and its client's failures, in our words (what a member's 503 and start, and cairn cluster, say)", async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [new BrokenCircuitError(), /^no etcd endpoint is answering .*is etcd running, with a quorum of its members\?$/],
    [
      new Error('14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:59999. Resolution note: '),
      /^connection refused at 127\.0\.0\.1:59999: is etcd running there\?$/,
    ],
    [new Error('14 UNAVAILABLE: Name resolution failed for target dns:etcd.invalid:2379'), /^no such host: etcd\.invalid:2379$/],
    [new Error('4 DEADLINE_EXCEEDED: Deadline exceeded'), /^no answer within 2 s: etcd is unreachable, overloaded, or without a quorum$/],
    [new Error('etcdserver: no leader'), /^etcd has no leader: a quorum of its members is down$/],
    [new Error('12 UNIMPLEMENTED: Received HTTP status code 404'), /^the URL answers, but not as etcd's client API \(HTTP 404\)/],
    [new Error('14 UNAVAILABLE: something else. Resolution note: '), /^etcd is unreachable: is it running, and is this its client URL\?$/],
    // etcd's own words stay (the follower matches "compacted").
    [new Error('etcdserver: mvcc: required revision has been compacted'), /^etcdserver: mvcc: required revision has been compacted$/],
  ];
  for (const [err, want] of cases) t.match(etcdReason(err), want, String((err as Error).message));
});

t.test('the bin (scripts/cairn.mjs) runs from the build or without one, and the npm scripts call it', async (t) => {
  // npm test builds dist/ first: the bin runs the build.
  t.ok(distCurrent(), 'dist/ is current');
  const r = await runProcess(['scripts/cairn.mjs', 'intkey', 'show', 'cli-a', '--json', ...url], {}, true);
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), { name: 'cli-a', value: 8 });
  // A copy of the package without dist/: the bin runs the sources through tsx.
  const pkgDir = mkdtempSync(join(tmpdir(), 'cairn-nobuild-'));
  t.teardown(() => rmSync(pkgDir, { recursive: true, force: true }));
  for (const f of ['package.json', 'node_modules', 'src', 'workers', 'tsconfig.json', 'tsconfig.build.json'])
    symlinkSync(resolve(f), join(pkgDir, f));
  mkdirSync(join(pkgDir, 'scripts'));
  for (const f of ['cairn.mjs', 'start.mjs', 'build-state.mjs']) copyFileSync(join('scripts', f), join(pkgDir, 'scripts', f));
  const src = await runProcess([join(pkgDir, 'scripts', 'cairn.mjs'), 'intkey', 'show', 'cli-a', '--json', ...url], {}, true);
  t.equal(src.code, 0, src.stderr);
  t.same(JSON.parse(src.stdout), { name: 'cli-a', value: 8 }, 'the same answer without a build');
  t.notOk(existsSync(join(pkgDir, 'dist')), 'nothing was built');
  const bad = await runProcess(['scripts/cairn.mjs', 'batch', 'status', 'zz', '--json', ...url], {}, true);
  t.equal(bad.code, 2);
  t.equal(bad.stderr, '', 'the bin keeps the --json contract');
  t.match(JSON.parse(bad.stdout), { error: /^not a batch id/, exit: 2 });
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> };
  t.equal(pkg.bin.cairn, 'scripts/cairn.mjs');
  for (const s of ['intkey', 'token', 'keygen', 'circuit', 'batch', 'check', 'prune']) t.equal(pkg.scripts[s], `node scripts/cairn.mjs ${s}`);
});

t.test('the node stopped: cairn check finds everything this file did clean; --json, --quiet; prune --json', async (t) => {
  const busy = await inProcess(['check', '--data-dir', tn.dataDir]);
  t.equal(busy.code, 2, 'a running node holds the directory');
  t.match(busy.stderr, /in use by another process/);
  await tn.node.close();
  const text = await cairn(['check', '--data-dir', tn.dataDir]);
  t.equal(text.code, 0, text.stdout + text.stderr);
  t.match(
    text.stdout,
    /^families on the chain: intkey 1\.0, sawtooth_settings 1\.0, tally 1\.0 \(transaction processor\)$/m,
    'the processor family is known',
  );
  t.match(
    text.stdout,
    /^note: .*pending record .*family "nobody" version "2\.0" is neither built in nor on the chain: the batch waits for a transaction processor/m,
  );
  t.notMatch(text.stdout, /^PROBLEM/m);
  t.match(text.stdout, /: clean \(0 problems\)\n$/);
  t.equal(text.stderr, '');
  const json = await inProcess(['check', '--data-dir', tn.dataDir, '--json']);
  t.equal(json.code, 0);
  t.match(oneDocument(t, json, 'check --json'), {
    clean: true,
    problems: [],
    notes: [/nobody/],
    families: [{ name: 'intkey', version: '1.0', built_in: true }, { name: 'sawtooth_settings' }, { name: 'tally', version: '1.0', built_in: false }],
  });
  const quiet = await inProcess(['check', '--data-dir', tn.dataDir, '--quiet']);
  t.match(quiet.stdout, /^checked .*: clean \(0 problems\)\n$/, '--quiet: the summary alone');
  t.equal(quiet.stderr, '');
  const prune = await inProcess(['prune', '--data-dir', tn.dataDir, '--keep', '2', '--json']);
  t.equal(prune.code, 0, prune.stderr);
  t.match(oneDocument(t, prune, 'prune --json'), { head: Number, kept_from: Number, removed_records: Number });
  t.equal((await inProcess(['check', '--data-dir', tn.dataDir, '--quiet'])).code, 0, 'clean after the prune too');
});
