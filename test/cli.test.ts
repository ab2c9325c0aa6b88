/**
 * The `cairn` command against a real node: each command spawned as a process, its output
 * and exit status checked, and its effect checked on the node's state over HTTP. Bad
 * arguments give a clear message, a non-zero exit and no stack trace.
 */
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { decode } from '../src/codec/cbor.js';
import { intkeyAddress, intkeyPayload } from '../src/families/intkey.js';
import { Signer } from '../src/crypto/secp256k1.js';
import { startTestNode } from './helpers/node.js';
import { TS_ARGS } from './helpers/child.js';
import { newSigner, intkeyBatch, batchList, getJson } from './helpers/batches.js';
import { COMMAND_NAMES, run, runCommand, USAGE } from '../src/cli/cairn.js';

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
const cairn = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Out> => runProcess([...TS_ARGS, 'src/cli/cairn.ts', ...args], env);

function noStack(t: Test, r: Out): void {
  t.notMatch(r.stdout + r.stderr, /\n\s+at .+:\d+:\d+/, 'no stack trace');
}

const tn = await startTestNode();
const tmp = mkdtempSync(join(tmpdir(), 'cairn-cli-'));
t.teardown(async () => {
  await tn.stop();
  rmSync(tmp, { recursive: true, force: true });
});
const url = ['--url', tn.ledgerUrl];
const keyArgs = ['--data-dir', tmp];

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
    const code = await runCommand('cairn', USAGE, () => run(args), args.includes('--json'));
    return { code, stdout, stderr };
  } finally {
    process.stdout.write = out;
    process.stderr.write = err;
    process.exitCode = exitCode;
  }
}

t.test('cairn: help, unknown and missing commands', async (t) => {
  const help = await cairn(['--help']);
  t.equal(help.code, 0);
  for (const c of COMMAND_NAMES) t.match(help.stdout, new RegExp(`^  ${c} `, 'm'), `${c} is listed`);
  const none = await cairn([]);
  t.equal(none.code, 2);
  t.equal(none.stderr, 'cairn: missing command (cairn --help shows the usage)\n');
  const bad = await inProcess(['frob']);
  t.equal(bad.code, 2);
  t.equal(bad.stderr, 'cairn: unknown command frob (cairn --help shows the usage)\n');
  t.same(JSON.parse((await inProcess(['frob', '--json'])).stderr), { error: 'unknown command frob', exit: 2 });
});

t.test('every command: --help says what it does; a bad invocation is one line naming the option, exit 2', async (t) => {
  for (const c of COMMAND_NAMES) {
    // start runs the node in this process: only its help here (its refusal is spawned below).
    const help = await inProcess([c, '--help']);
    t.equal(help.code, 0, `${c} --help exits 0`);
    t.match(help.stdout, new RegExp(`^usage: cairn ${c} `), `${c} --help: usage: cairn ${c} …`);
    t.match(help.stdout, /^[A-Z][a-z]+s[ ,][^\n]+/m, `${c} --help says what the command does`);
    t.equal(help.stderr, '');
    if (c === 'start') continue;
    const bad = await inProcess([c, '--frob']);
    t.equal(bad.code, 2, `${c} --frob exits 2`);
    t.equal(bad.stderr, `cairn ${c}: unknown option --frob (cairn ${c} --help shows the usage)\n`);
    t.equal(bad.stdout, '');
    const json = await inProcess([c, '--frob', '--json']);
    t.equal(json.code, 2);
    t.same(JSON.parse(json.stderr), { error: 'unknown option --frob', exit: 2 }, `${c} --json: the error as JSON`);
  }
  const start = await cairn(['start', '--frob']);
  t.equal(start.code, 2);
  t.equal(start.stderr, 'cairn start: unknown option --frob (cairn start --help shows the options)\n');
  const url = await inProcess(['intkey', 'show', 'x', '--url', 'localhost:8008']);
  t.equal(url.code, 2);
  t.match(url.stderr, /^cairn intkey: --url: expected an http:\/\/ or https:\/\/ URL, got "localhost:8008"/);
  const notUrl = await inProcess(['batch', 'list', '--url', 'http://']);
  t.match(notUrl.stderr, /^cairn batch: --url: not a URL: "http:\/\/"/);
  const long = await inProcess(['intkey', 'set', 'x'.repeat(21), '1', '--url', 'http://127.0.0.1:1']);
  t.equal(long.code, 2, 'a name over 20 characters is refused before anything is sent');
  t.match(long.stderr, /name "x{21}" has 21 characters; intkey takes at most 20/);
});

t.test('circuit, check, prune: usage errors and refusals', async (t) => {
  const key = join(tn.dataDir, 'keys', 'admin.priv');
  const cases: Array<[string[], RegExp, number]> = [
    [['circuit'], /missing command \(propose, vote/, 2],
    [['circuit', 'frob'], /unknown command circuit frob/, 2],
    [['circuit', 'vote', '--circuit-id', 'x', '--accept', '--key', key], /--node-id is required/, 2],
    [['circuit', 'vote', '--node-id', 'a', '--circuit-id', 'x', '--key', key], /exactly one of --accept and --reject/, 2],
    [['circuit', 'propose', '--node-id', 'a', '--member', 'x', '--key', key], /--member takes ID=ENDPOINT/, 2],
    [['circuit', 'propose', '--node-id', 'a', '--service', 'x', '--key', key], /--service takes SVC::NODE/, 2],
    [['circuit', 'propose', '--node-id', 'a', '--service-arg', 'x', '--key', key], /--service-arg takes SVC::KEY=VALUE/, 2],
    [['circuit', 'propose', '--auth-type', 'x', '--key', key], /--auth-type takes trust or challenge/, 2],
    [['circuit', 'show', 'circuit', '--key', key], /show needs circuit\|proposal and an id/, 2],
    [['circuit', 'list', '--key', join(tmp, 'none.priv')], /cannot use the key file .*none\.priv \(--key FILE\): ENOENT/, 1],
    [['circuit', 'list', '--key', key, '--url', 'http://127.0.0.1:1'], /cannot reach the node API at http:\/\/127\.0\.0\.1:1 .*CAIRN_NODE_URL/, 1],
    [
      ['circuit', 'sabre-setup', '--circuit-id', 'abcde-12345', '--service', 'sA00', '--key', key, '--url', 'http://127.0.0.1:1'],
      /cannot reach the node API at http:\/\/127\.0\.0\.1:1 /,
      1,
    ],
    [['check', 'extra'], /unexpected argument extra/, 2],
    [['check', '--data-dir', join(tmp, 'none')], /no data directory at .*none \(--data-dir DIR\)/, 2],
    [['prune', '--data-dir', tmp], /--keep N is required/, 2],
    [['prune', '--keep', '1', 'extra'], /unexpected argument extra/, 2],
    [['keygen', 'extra', '--out', join(tmp, 'k')], /unexpected argument extra/, 2],
    [['token', 'extra'], /unexpected argument extra/, 2],
    [['token', '--wait', 'x'], /--wait takes whole seconds/, 2],
  ];
  for (const [args, message, code] of cases) {
    const r = await inProcess(args);
    t.equal(r.code, code, `${args.join(' ')}: exit ${code}`);
    t.match(r.stderr, message, args.join(' '));
    t.equal(r.stderr.split('\n').length, 2, 'one line');
  }
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
  const show = await inProcess(['circuit', 'show', 'proposal', 'abcde-12345', '--json', '--key', key, '--url', tn.nodeUrl]);
  t.equal(show.code, 1);
  t.match(JSON.parse(show.stdout), { status: 404, body: { message: /Unable to find proposal/ } });
});

t.test('cairn intkey set|inc|dec|show|list against the node', async (t) => {
  const set = await cairn(['intkey', 'set', 'cli-a', '5', ...url, ...keyArgs]);
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, /^set cli-a 5: batch [0-9a-f]{128} COMMITTED\n$/);
  t.equal(await stateValue('cli-a'), 5, 'the node holds the value');
  const inc = await cairn(['intkey', 'inc', 'cli-a', '3', '--json', ...url, ...keyArgs]);
  t.equal(inc.code, 0, inc.stderr);
  const incJson = JSON.parse(inc.stdout);
  t.match(incJson, { verb: 'inc', name: 'cli-a', value: 3, status: 'COMMITTED', batch_id: /^[0-9a-f]{128}$/ });
  t.equal((await getJson(`${tn.ledgerUrl}/batch_statuses?id=${incJson.batch_id}`)).json.data[0].status, 'COMMITTED');
  t.equal(await stateValue('cli-a'), 8);
  t.equal((await cairn(['intkey', 'set', 'cli-b', '1', ...url, ...keyArgs])).code, 0);
  const dec = await cairn(['intkey', 'dec', 'cli-b', '1', ...url, ...keyArgs]);
  t.equal(dec.code, 0, dec.stderr);
  t.equal(await stateValue('cli-b'), 0);
  const under = await cairn(['intkey', 'dec', 'cli-b', '4', ...url, ...keyArgs]);
  t.equal(under.code, 1, 'an INVALID batch exits 1');
  t.match(under.stderr, /batch INVALID/);
  t.equal(await stateValue('cli-b'), 0, 'the invalid batch changed nothing');

  const show = await cairn(['intkey', 'show', 'cli-a', ...url]);
  t.equal(show.stdout, 'cli-a: 8\n');
  t.same(JSON.parse((await cairn(['intkey', 'show', 'cli-a', '--json', ...url])).stdout), { name: 'cli-a', value: 8 });
  t.equal((await cairn(['intkey', 'get', 'cli-a', ...url])).stdout, 'cli-a: 8\n', 'get is show');
  const missing = await cairn(['intkey', 'show', 'never-set', ...url]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^cairn intkey: never-set: /);
  const list = await cairn(['intkey', 'list', '--json', ...url]);
  t.equal(list.code, 0, list.stderr);
  t.same(
    JSON.parse(list.stdout).filter((e: { name: string }) => e.name.startsWith('cli-')),
    [
      { name: 'cli-a', value: 8 },
      { name: 'cli-b', value: 0 },
    ],
  );
  t.match((await cairn(['intkey', 'list', ...url])).stdout, /^cli-a: 8\ncli-b: 0$/m);
});

t.test('cairn intkey: bad arguments and an unreachable node', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['intkey'], /missing verb/],
    [['intkey', 'frob', 'x'], /unknown verb frob/],
    [['intkey', 'set', 'x'], /set needs a whole number value, got none/],
    [['intkey', 'set', 'x', 'ten'], /set needs a whole number value, got "ten"/],
    [['intkey', 'set', 'x', '99999999999'], /over intkey's limit/],
    [['intkey', 'show'], /missing name/],
    [['intkey', 'show', 'x', '--frob'], /unknown option --frob/],
    [['intkey', 'set', 'x', '1', '--wait', 'soon'], /--wait takes whole seconds/],
    [['intkey', 'show', 'x', '--url'], /--url needs a value/],
  ];
  for (const [args, message] of cases) {
    const r = await cairn(args.includes('--url') ? args : [...args, ...url]);
    t.equal(r.code, 2, `${args.join(' ')}: exit 2`);
    t.match(r.stderr, message, args.join(' '));
    t.match(r.stderr, /\(cairn intkey --help shows the usage\)\n$/);
    noStack(t, r);
  }
  const down = await cairn(['intkey', 'show', 'x', '--url', 'http://127.0.0.1:1']);
  t.equal(down.code, 1);
  t.match(down.stderr, /cannot reach the ledger gateway at http:\/\/127\.0\.0\.1:1 .*--url/);
  noStack(t, down);
});

t.test('cairn batch submit|status|list', async (t) => {
  const signer = newSigner();
  const b1 = intkeyBatch(signer, [['set', 'cli-batch', 11]]);
  const b2 = intkeyBatch(signer, [['inc', 'cli-batch', 1]]);
  const file = join(tmp, 'two.batches');
  writeFileSync(file, batchList(b1, b2));
  const sub = await cairn(['batch', 'submit', file, '--json', ...url]);
  t.equal(sub.code, 0, sub.stderr);
  t.same(
    JSON.parse(sub.stdout).map((s: { id: string; status: string }) => [s.id, s.status]),
    [
      [b1.id, 'COMMITTED'],
      [b2.id, 'COMMITTED'],
    ],
  );
  t.equal(await stateValue('cli-batch'), 12, 'both batches took effect');
  const st = await cairn(['batch', 'status', b1.id, ...url]);
  t.equal(st.code, 0);
  t.equal(st.stdout, `${b1.id} COMMITTED\n`);
  const unknown = 'ab'.repeat(64);
  t.match(JSON.parse((await cairn(['batch', 'status', unknown, '--json', ...url])).stdout), [{ id: unknown, status: 'UNKNOWN' }]);
  const list = await cairn(['batch', 'list', '--limit', '5', '--json', ...url]);
  t.equal(list.code, 0, list.stderr);
  const rows = JSON.parse(list.stdout) as Array<{ id: string; families: string[]; signer: string }>;
  t.match(
    rows.find((r) => r.id === b2.id),
    { families: ['intkey'], signer: signer.publicKey },
    'the latest batches include ours',
  );
  t.match((await cairn(['batch', 'list', ...url])).stdout, new RegExp(`^${b2.id} 1 txn intkey signer`, 'm'));

  const garbage = join(tmp, 'garbage.batches');
  writeFileSync(garbage, 'not a batch list');
  const refused = await cairn(['batch', 'submit', garbage, ...url]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /^cairn batch: .*garbage\.batches: batch refused: /);
  noStack(t, refused);
  const cases: Array<[string[], RegExp, number]> = [
    [['batch'], /missing command \(submit, status, list, build\)/, 2],
    [['batch', 'frob'], /unknown command batch frob/, 2],
    [['batch', 'submit'], /submit needs at least one BatchList file/, 2],
    [['batch', 'status'], /status needs at least one batch id/, 2],
    [['batch', 'status', 'abc'], /not a batch id \(128 hex digits\): abc/, 2],
    [['batch', 'list', '--limit', '0'], /--limit takes a number from 1 to 9999/, 2],
    [['batch', 'submit', join(tmp, 'nope')], /cannot read .*nope: ENOENT/, 1],
  ];
  for (const [args, message, code] of cases) {
    const r = await cairn([...args, ...url]);
    t.equal(r.code, code, `${args.join(' ')}: exit ${code}`);
    t.match(r.stderr, message);
    noStack(t, r);
  }
});

t.test('cairn batch build: signed BatchList files that submit and commit', async (t) => {
  const key = join(tmp, 'builder.priv');
  const file = join(tmp, 'built.batches');
  const built = await inProcess([
    ...'batch build intkey set cli-build 7 inc cli-build 2 set cli-build2 1 --per-batch 2 --json'.split(' '),
    ...['--key', key, '--out', file],
  ]);
  t.equal(built.code, 0, built.stderr);
  const meta = JSON.parse(built.stdout) as { file: string; signer: string; transactions: number; batches: string[] };
  t.equal(meta.transactions, 3);
  t.equal(meta.batches.length, 2, 'two per batch: two batches in one file');
  t.equal(meta.signer, new Signer(readFileSync(key, 'utf8').trim()).publicKey, 'signed with the key file');
  const sub = await inProcess(['batch', 'submit', file, '--json', ...url]);
  t.equal(sub.code, 0, sub.stderr);
  t.same(
    JSON.parse(sub.stdout).map((s: { id: string; status: string }) => [s.id, s.status]),
    meta.batches.map((id) => [id, 'COMMITTED']),
  );
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

  const cases: Array<[string[], RegExp, number]> = [
    [['batch', 'build', 'intkey', 'set', 'x', '1'], /build needs --out FILE/, 2],
    [['batch', 'build', '--out', file], /build needs a kind: intkey or raw/, 2],
    [['batch', 'build', 'frob', '--out', file], /unknown kind frob/, 2],
    [['batch', 'build', 'intkey', 'set', 'x', '--out', file], /VERB NAME VALUE triples/, 2],
    [['batch', 'build', 'intkey', 'mul', 'x', '1', '--out', file], /unknown verb mul/, 2],
    [['batch', 'build', 'intkey', 'set', 'x'.repeat(21), '1', '--out', file], /takes at most 20/, 2],
    [['batch', 'build', 'intkey', 'set', 'x', '-1', '--out', file], /whole number from 0 to 4294967295/, 2],
    [['batch', 'build', 'intkey', 'set', 'x', '1', '--per-batch', '0', '--out', file], /--per-batch takes a whole number from 1 to 1000/, 2],
    [['batch', 'build', 'intkey', 'set', 'x', '1', '--repeat', '100001', '--out', file], /--repeat takes a whole number/, 2],
    [['batch', 'build', 'intkey', 'set', 'x', '1', 'set', 'y', '1', '--repeat', '60000', '--out', file], /at most 100000 transactions per file/, 2],
    [['batch', 'build', 'raw', '--version', '1', '--payload', 'aa', '--out', file], /build raw needs --family/, 2],
    [['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--out', file], /at least one --payload HEX or --payload-file FILE/, 2],
    [['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--payload', 'xyz', '--out', file], /--payload takes hex bytes, got "xyz"/, 2],
    [
      ['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--input', 'abc', '--payload', 'aa', '--out', file],
      /--input: not an address or prefix/,
      2,
    ],
    [['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--payload', 'aa', 'extra', '--out', file], /unexpected argument extra/, 2],
    [
      ['batch', 'build', 'raw', '--family', 'f', '--version', '1', '--payload-file', join(tmp, 'nope'), '--out', file],
      /cannot read .*nope: ENOENT/,
      1,
    ],
    [['batch', 'build', 'intkey', 'set', 'x', '1', '--key', file, '--out', file], /cannot use the key file .*built\.batches/, 1],
    [['batch', 'build', 'intkey', 'set', 'x', '1', '--key', key, '--out', join(tmp, 'no', 'dir', 'f')], /cannot write .*f: ENOENT/, 1],
    [['batch', 'list', '--out', file], /--out is an option of batch build/, 2],
  ];
  for (const [args, message, code] of cases) {
    const res = await inProcess(args);
    t.equal(res.code, code, `${args.join(' ')}: exit ${code}`);
    t.match(res.stderr, message, args.join(' '));
  }
});

t.test('cairn token, keygen and circuit', async (t) => {
  const tok = await cairn(['token', '--json', '--data-dir', tn.dataDir]);
  t.equal(tok.code, 0, tok.stderr);
  const { token } = JSON.parse(tok.stdout) as { token: string };
  t.match(token, /^Cylinder:[\w+/=-]+\.[\w+/=-]+\.[\w+/=-]+$/);
  const circuits = await fetch(`${tn.nodeUrl}/admin/circuits`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(circuits.status, 200, 'the token is accepted by the node');
  t.equal((await cairn(['token', '--frob'])).code, 2);

  const out = join(tmp, 'keys', 'agent.priv');
  const kg = await cairn(['keygen', '--out', out, '--json']);
  t.equal(kg.code, 0, kg.stderr);
  const hex = readFileSync(out, 'utf8').trim();
  t.same(JSON.parse(kg.stdout), { public_key: new Signer(hex).publicKey, file: out });
  t.notMatch(kg.stdout, hex, 'the private key is not printed');
  const again = await cairn(['keygen', '--out', out]);
  t.equal(again.code, 1);
  t.match(again.stderr, /the file exists/);

  const key = ['--key', join(tn.dataDir, 'keys', 'admin.priv'), '--url', tn.nodeUrl];
  const list = await cairn(['circuit', 'list', '--json', ...key]);
  t.equal(list.code, 0, list.stderr);
  t.match(JSON.parse(list.stdout), { status: 200, body: { data: [] } });
  const plain = await cairn(['circuit', 'list', ...key]);
  t.match(plain.stdout, /^200 \{/);
});

t.test('the bin (scripts/cairn.mjs) runs without a build, and the npm scripts call it', async (t) => {
  const r = await runProcess(['scripts/cairn.mjs', 'intkey', 'show', 'cli-a', '--json', ...url], {}, true);
  t.equal(r.code, 0, r.stderr);
  t.same(JSON.parse(r.stdout), { name: 'cli-a', value: 8 });
  const bad = await runProcess(['scripts/cairn.mjs', 'batch', 'status', 'zz', ...url], {}, true);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /^cairn batch: not a batch id/);
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { bin: Record<string, string>; scripts: Record<string, string> };
  t.equal(pkg.bin.cairn, 'scripts/cairn.mjs');
  for (const s of ['intkey', 'token', 'keygen', 'circuit', 'batch']) t.equal(pkg.scripts[s], `node scripts/cairn.mjs ${s}`);
});
