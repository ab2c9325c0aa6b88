/**
 * `cairn bench` against real nodes (one it spawns, two started here and named by URL) and
 * against a small stand-in server whose answers the test controls: open-loop latency from
 * intended send times, 429 with Retry-After, INVALID batches, compare's verdicts, and every
 * bad input giving one clear line and a non-zero exit.
 */
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestNode } from './helpers/node.js';
import { startFakeLedger } from './helpers/fake-ledger.js';
import { TS_ARGS } from './helpers/child.js';
import { batchList, getJson, intkeyBatch, newSigner } from './helpers/batches.js';
import { parseBenchArgs } from '../src/bench/options.js';
import { runBench, type BenchResult } from '../src/bench/bench.js';
import type { NodeStage } from '../src/bench/node-stages.js';
import { run as benchCli, USAGE } from '../src/cli/bench.js';
import { runCommand } from '../src/cli/args.js';
import { compareRuns, welch } from '../src/bench/compare.js';
import { opOf, signRange } from '../src/bench/workload.js';
import { BatchList } from '../src/proto/index.js';
import { randomPrivateKey } from '../src/crypto/secp256k1.js';

const exec = promisify(execFile);
const tmp = mkdtempSync(join(tmpdir(), 'cairn-bench-test-'));
t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
const file = (name: string): string => join(tmp, name);

/** Runs `cairn bench …` in this process; returns the exit code and what it printed. */
async function bench(argv: string[], tty = false): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const stdout = process.stdout.write.bind(process.stdout);
  const code = await runCommand('cairn bench', USAGE, () => {
    if (argv[0] === 'compare') {
      // compare prints to stdout itself.
      process.stdout.write = ((s: string) => {
        out += s;
        return true;
      }) as typeof process.stdout.write;
      return benchCli(argv);
    }
    const { options } = parseBenchArgs(argv);
    const io = {
      out: (s: string): void => {
        out += s;
      },
      err: (s: string): void => {
        err += s;
      },
      tty,
    };
    return runBench(options, io);
  })
    .catch(() => 99)
    .finally(() => {
      process.stdout.write = stdout;
    });
  process.exitCode = 0;
  return { code, out, err };
}

/** Runs the real command as a process, as a user would. */
async function cairn(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await exec(process.execPath, [...TS_ARGS, 'src/cli/cairn.ts', 'bench', ...args], { env: { ...process.env, ...env }, timeout: 120_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

const readJson = (f: string): BenchResult & { runs?: BenchResult[] } => JSON.parse(readFileSync(f, 'utf8'));

t.test('a spawned node: the contract figures, the generator measured first', async (t) => {
  // --keyspace 20: after the first 20 sets, incs of those names (all valid: none INVALID below).
  // One connection, so that each set is acknowledged before any inc of its name is sent. With
  // 8, 4 of the 300 came back INVALID in one CI run: the node acknowledges concurrent requests
  // in the order their checks finish (two verify threads), so a set held up long enough (most
  // likely a thread descheduled under load) can come after an inc of its name sent 64 batches later.
  // Not --quiet: its notes (the node started, the generator's capacity) come first on stderr.
  const r = await bench(['--spawn', '--batches', '300', '--connections', '1', '--keyspace', '20', '--json', file('spawn.json')]);
  t.equal(r.code, 0, r.err);
  const j = readJson(file('spawn.json'));
  t.equal(j.committed, 300, 'every batch committed');
  t.ok(j.committedBatchesPerSec > 0 && j.offeredRate > 0 && j.achievedRate > 0, 'rates');
  for (const k of ['submitLatencyMs', 'commitLatencyMs'] as const) {
    t.ok(j[k].p50 > 0 && j[k].p99 >= j[k].p50 && j[k].max >= j[k].p99, `${k}: p50 ≤ p99 ≤ max`);
    t.equal(j[k].count, 300, `${k} counts every batch`);
  }
  t.ok(j.commitLatencyMs.p50 >= j.submitLatencyMs.p50, 'a commit comes after its submit');
  t.same([j.http429, j.invalid, j.errors], [0, 0, 0]);
  t.ok(j.generatorCapacityBatchesPerSec > 0, 'generator capacity in the report');
  t.match(r.err, /^starting a Cairn node[\s\S]*generator: [\d,]+ batches\/s/, 'the capacity is printed before the run');
  t.match(r.out, /generator: +[\d,]+ batches\/s signed ahead of the clock .*× the committed rate/);
});

t.test('two nodes by URL, round-robin, open loop; INVALID batches counted; --repeat; the node stages', async (t) => {
  // a serves its metrics, b does not: the two-node runs read no node stages, a's alone do.
  const a = await startTestNode({ CAIRN_METRICS: 'on' });
  const b = await startTestNode();
  t.teardown(async () => {
    await a.stop();
    await b.stop();
  });
  const out = file('two.json');
  const md = file('two.md');
  const r = await bench(
    [
      '--url',
      a.ledgerUrl,
      '--url',
      b.ledgerUrl,
      '--rate',
      '150',
      '--batches',
      '100',
      '--invalid',
      '0.1',
      '--repeat',
      '2',
      '--json',
      out,
      '--markdown',
      md,
    ],
    true,
  );
  t.equal(r.code, 0, r.err);
  const j = readJson(out);
  t.equal(j.runs?.length, 2, 'a runs array of 2');
  for (const run of j.runs ?? []) {
    t.equal(run.invalid, 10, 'every 10th batch is INVALID and counted');
    t.equal(run.committed, 90, 'the others committed');
    t.equal(run.offeredRate > 100 && run.offeredRate < 200, true, `offered about 150/s (${run.offeredRate})`);
  }
  t.same(j.targets, [a.ledgerUrl, b.ledgerUrl]);
  for (const n of [a, b]) {
    const blocks = await getJson(`${n.ledgerUrl}/blocks?limit=1`);
    t.ok(Number(blocks.json.data[0].header.block_num) > 0, 'each node got batches');
  }
  t.ok(r.err.includes('\r\u001b[2K'), 'a live progress line, rewritten in place on a terminal');
  t.match(r.err, /\[2K +\d+ s +offered/);
  t.match(readFileSync(md, 'utf8'), /\| invalid \| 10 \|/);
  t.equal(j.nodeStages, null, 'a target without metrics: no node stages');
  t.ok(j.clientEventLoopMs.p99 >= 0 && j.clientEventLoopMs.max >= j.clientEventLoopMs.p99, "the bench's own event loop delay, p99 ≤ max");
  t.match(r.out, /client: +event loop p99 [\d.]+ ms, max [\d.]+ ms \(the bench's own thread\)/);
  t.match(r.out, /node stages: not read \(the node serves no \/metrics/);

  // --payloads: pre-built lists, one per line (base64 and hex), their batch ids read from the lists.
  const signer = newSigner();
  const lists = [1, 2, 3].map((i) => batchList(intkeyBatch(signer, [['set', `pl${i}`, i]])));
  writeFileSync(file('p.txt'), `# three lists\n${lists[0]?.toString('base64')}\n\n${lists[1]?.toString('hex')}\n${lists[2]?.toString('base64')}\n`);
  const p = await bench(['--url', a.ledgerUrl, '--payloads', file('p.txt'), '--rate', '20', '--json', file('p.json'), '--quiet']);
  t.equal(p.code, 0, p.err);
  const pj = readJson(file('p.json'));
  t.equal(pj.committed, 3, 'every payload batch committed');
  t.match(p.out, /generator: +pre-built batch lists/);
  // a alone serves its metrics: each stage counted over this run only (its earlier batches are left out).
  const stage = (name: string): NodeStage | undefined => pj.nodeStages?.stages.find((x) => x.stage === name);
  t.equal(stage('received → verified')?.count, 3, 'three bodies verified');
  t.equal(stage('POST /batches (202)')?.count, 3, 'three answered 202');
  t.equal(stage('acknowledged → committed')?.count, 3, 'three committed');
  const commit = stage('acknowledged → committed');
  t.ok(commit !== undefined && commit.p99Ms >= commit.p50Ms && commit.p50Ms > 0, 'p99 ≥ p50 > 0');
  t.ok(typeof pj.nodeStages?.eventLoopMaxMs === 'number', 'the event loop delay read');
  t.match(p.out, /node stages \(its \/metrics over the run[^\n]*\n +received → verified +[\d.]+ \/ [\d.]+ +\(3\)/);
});

t.test('open loop: latency counts from the intended send time (a slow server)', async (t) => {
  const fake = await startFakeLedger({ submitDelayMs: 100 });
  t.teardown(() => fake.close());
  // 50/s with one connection to a server that takes 100 ms a submit: batch k is due at 20k ms but
  // can only be sent at about 100k ms; its latency is counted from 20k ms.
  const r = await bench(['--url', fake.url, '--rate', '50', '--batches', '15', '--connections', '1', '--json', file('slow.json')]);
  t.equal(r.code, 0, r.err);
  const j = readJson(file('slow.json'));
  const held = [...fake.held].sort((x, y) => x - y)[Math.floor(fake.held.length / 2)] ?? 0;
  t.equal(fake.held.length, 15, 'the server answered every batch');
  t.ok(j.submitLatencyMs.max > 4 * held, `max ${j.submitLatencyMs.max} ms, over 4× the time the server held a submit (median ${held.toFixed(0)} ms)`);
  t.ok(j.offeredRate > j.achievedRate, `offered ${j.offeredRate}/s > achieved ${j.achievedRate}/s`);
  t.match(r.err, /^ +\d+ s +offered/m, 'plain progress lines off a terminal');
});

t.test('429 with Retry-After: counted, and the batch sent again no sooner than asked', async (t) => {
  const fake = await startFakeLedger({ first429RetryAfter: 1 });
  t.teardown(() => fake.close());
  const r = await bench(['--url', fake.url, '--batches', '5', '--connections', '1', '--json', file('429.json'), '--quiet']);
  t.equal(r.code, 0, r.err);
  const j = readJson(file('429.json'));
  t.equal(j.http429, 1, 'one 429 counted');
  t.equal(j.committed, 5, 'every batch committed, the refused one included');
  t.equal(j.errors, 0, 'a 429 is not an error');
  const [first, second] = fake.submits;
  t.equal(first?.status, 429);
  t.ok((second?.at ?? 0) - (first?.at ?? 0) >= 950, `sent again after ${((second?.at ?? 0) - (first?.at ?? 0)).toFixed(0)} ms (Retry-After: 1)`);

  // The command as a process: the summary on stdout, the generator's line and progress on stderr.
  const proc = await cairn(['--url', fake.url, '--batches', '3', '--connections', '1']);
  t.equal(proc.code, 0, proc.stderr);
  t.match(proc.stdout, /^cairn bench: 3 intkey batches of 1 txn to .*\n[\s\S]*committed: +3 batches/);
  t.match(proc.stderr, /^generator: [\d,]+ batches\/s of 1 txn/m);
});

t.test('compare: no difference for two runs of one build, slower with a delay on every submit', async (t) => {
  const fake = await startFakeLedger({ submitDelayMs: 20 });
  t.teardown(() => fake.close());
  const args = ['--url', fake.url, '--batches', '20', '--connections', '1', '--repeat', '3', '--quiet', '--workers', '1'];
  t.equal((await bench([...args, '--json', file('a.json')])).code, 0);
  t.equal((await bench([...args, '--json', file('b.json')])).code, 0);
  // The test hook: 40 ms before every submit. --baseline compares at the end of the run.
  process.env.CAIRN_BENCH_TEST_SUBMIT_DELAY_MS = '40';
  const slow = await bench([...args, '--json', file('c.json'), '--baseline', file('a.json'), '--min-effect', '20']);
  delete process.env.CAIRN_BENCH_TEST_SUBMIT_DELAY_MS;
  t.equal(slow.code, 1, 'slower than the baseline: exit 1');
  t.match(slow.out, /this run is slower/);
  // Two runs of one build: a change under 20% does not count on a shared machine.
  const same = await bench(['compare', file('a.json'), file('b.json'), '--min-effect', '20']);
  t.equal(same.code, 0, 'no difference: exit 0');
  const slower = await bench(['compare', file('a.json'), file('c.json'), '--min-effect', '20', '--json']);
  t.equal(slower.code, 1, 'B slower: exit 1');
  const faster = await bench(['compare', file('c.json'), file('a.json')]);
  t.equal(faster.code, 0, 'B faster: exit 0');
  t.match(same.out, /a\.json .*b\.json .*: no difference/);
  t.match(JSON.parse(slower.out), { verdict: 'slower', a: { runs: [Number, Number, Number] } });
  t.match(faster.out, /a\.json is faster/);
});

t.test('the workload: names, incs after the key space, invalid batches, one BatchList per batch', async (t) => {
  const spec = { prefix: 'w_', txns: 2, signerKeys: [randomPrivateKey(), randomPrivateKey()], keyspace: 4, incGap: 2, invalidEvery: 3 };
  t.same(
    [0, 1, 3, 4, 5, 9].map((op) => opOf(spec, op)),
    [
      { verb: 'set', name: 'w_0' },
      { verb: 'set', name: 'w_1' },
      { verb: 'set', name: 'w_3' },
      { verb: 'inc', name: `w_${(4 * 7919) % 2}` },
      { verb: 'inc', name: `w_${(5 * 7919) % 3}` },
      { verb: 'inc', name: `w_${(9 * 7919) % 4}` },
    ],
  );
  const chunk = signRange(spec, 0, 6);
  t.equal(new Set(chunk.ids).size, 6, 'six batches');
  t.equal(chunk.offsets.length, 7);
  const lists = chunk.ids.map(
    (_, k) =>
      BatchList.decode(chunk.bytes.subarray(chunk.offsets[k], chunk.offsets[k + 1])) as unknown as {
        batches: Array<{ headerSignature: string; transactions: unknown[] }>;
      },
  );
  t.same(
    lists.map((l) => [l.batches[0]?.headerSignature, l.batches[0]?.transactions.length]),
    chunk.ids.map((id) => [id, 2]),
    'each body is a BatchList of that batch, with 2 transactions',
  );
});

t.test("Welch's t-test against reference values (scipy.stats.ttest_ind, equal_var=False)", async (t) => {
  const w1 = welch([100, 102, 98, 101, 99], [90, 93, 91, 89, 92]);
  t.equal(Math.round(-w1.t * 1000) / 1000, 9, 't');
  t.equal(Math.round(w1.df * 1000) / 1000, 8, 'df');
  t.ok(Math.abs(w1.p - 1.8531184296430075e-5) < 1e-9, `p ${w1.p}`);
  const w2 = welch([10, 12, 9, 11], [10.5, 11, 12.5, 9.5, 10]);
  t.ok(Math.abs(w2.p - 0.8164583769602876) < 1e-6, `p ${w2.p}`);
  t.ok(Math.abs(w2.df - 6.1605497125916475) < 1e-6, `df ${w2.df}`);
  t.equal(compareRuns([5, 5, 5], [5, 5, 5]).verdict, 'no difference', 'no variance, no change');
  t.equal(compareRuns([5, 5, 5], [4, 4, 4]).verdict, 'slower', 'no variance, 20% less');
  t.equal(compareRuns([100, 101, 99], [103, 104, 102], 5).verdict, 'no difference', 'significant but under the minimum effect');
});

t.test('bad input: one line, a non-zero exit, no stack trace, no figures', async (t) => {
  const fakeHtml = await startFakeLedger({ notSawtooth: true });
  const fakeInvalid = await startFakeLedger({ status: 'INVALID' });
  const fakeBroken = await startFakeLedger({ statusFails: true });
  const fakeFull = await startFakeLedger({ always429: true });
  t.teardown(async () => {
    await fakeFull.close();
    await fakeHtml.close();
    await fakeInvalid.close();
    await fakeBroken.close();
  });
  writeFileSync(file('bad.txt'), 'this is not a batch list!\n');
  writeFileSync(file('bad2.txt'), `${Buffer.from('not protobuf at all').toString('hex')}\n`);
  writeFileSync(file('empty.txt'), '# nothing\n');
  writeFileSync(file('notjson.json'), '{');
  writeFileSync(file('one.json'), JSON.stringify({ committedBatchesPerSec: 5 }));
  const u = ['--url', fakeInvalid.url];
  const cases: Array<[string[], RegExp, number]> = [
    [[...u, '--connections', '0'], /--connections must be between 1 and 4096, got 0/, 2],
    [[...u, '--batches', 'abc'], /--batches takes a whole number, got "abc"/, 2],
    [[...u, '--txns', '-1'], /--txns takes a whole number, got "-1"/, 2],
    [[...u, '--rate', 'fast'], /--rate takes a number, got "fast"/, 2],
    [[...u, '--rate', ','], /--rate takes batches per second/, 2],
    [[...u, '--duration', '0s'], /--duration must be between 100ms and 24h/, 2],
    [[...u, '--duration', 'soon'], /--duration takes a duration/, 2],
    [[...u, '--invalid', '2'], /--invalid must be between 0 and 1/, 2],
    [[...u, '--rate', '5,10'], /several rates are steps/, 2],
    [[...u, '--step', '1s'], /--step needs --rate/, 2],
    [[...u, '--batches', '5', '--duration', '1s'], /not both/, 2],
    [[...u, '--spawn'], /--url or --spawn, not both/, 2],
    [[], /give the ledger to load/, 2],
    [['--url', 'ftp://x'], /--url takes an http/, 2],
    [['--url', 'nonsense'], /--url takes an http/, 2],
    [['--url'], /--url needs a value/, 2],
    [[...u, 'extra'], /unexpected argument extra/, 2],
    [[...u, '--payloads', file('bad.txt')], /--payloads: .*bad\.txt line 1: not a base64 or hex BatchList/, 2],
    [[...u, '--payloads', file('bad2.txt')], /bad2\.txt line 1: (not a BatchList|a BatchList needs)/, 2],
    [[...u, '--payloads', file('empty.txt')], /holds no batch list/, 2],
    [[...u, '--payloads', file('missing.txt')], /--payloads: cannot read the payload file .*ENOENT/, 2],
    [[...u, '--payloads', file('bad.txt'), '--txns', '2'], /--payloads sends the file as it is/, 2],
    [[...u, '--baseline', file('one.json')], /--baseline compares repeated runs/, 2],
    [[...u, '--repeat', '2', '--baseline', file('one.json')], /--baseline: .*one\.json holds 1 run: a comparison needs repeated runs/, 2],
    [[...u, '--repeat', '2', '--baseline', file('notjson.json')], /--baseline: cannot read the report .*not JSON/, 2],
    [[...u, '--html', file('no/such/dir/x.html')], /--html: cannot write .*x\.html: the directory .* does not exist/, 2],
    [['--url', fakeHtml.url], /is not a Sawtooth REST API: GET \/blocks\?limit=1 answered HTTP 200/, 1],
    [[...u, '--batches', '5', '--quiet'], /no batch was committed: 5 sent, 5 accepted, 5 invalid/, 1],
    [
      ['--url', fakeFull.url, '--batches', '1', '--commit-timeout', '1', '--quiet'],
      /no batch was committed: 1 sent, 0 accepted, 0 invalid, \d+ answered 429, 1 errors; first error: POST .*\/batches: still 429 after \d+ tries/,
      1,
    ],
    [
      ['--url', fakeBroken.url, '--batches', '2', '--commit-timeout', '1', '--quiet'],
      /no batch was committed: 2 sent, 2 accepted, 0 invalid, 0 answered 429, 2 errors; first error: commit tracking at .*: POST \/batch_statuses answered HTTP 500/,
      1,
    ],
    [['compare', file('a.json')], /compare needs two reports/, 2],
    [['compare', file('a.json'), file('b.json'), file('c.json')], /unexpected argument/, 2],
    [['compare', file('missing.json'), file('a.json')], /cannot read the report .*ENOENT/, 2],
    [['compare', file('notjson.json'), file('a.json')], /cannot read the report/, 2],
    [['compare', file('bad.txt'), file('a.json')], /cannot read the report/, 2],
    [['compare', file('one.json'), file('a.json')], /one\.json holds 1 run/, 2],
    [['compare', file('a.json'), file('a.json'), '--min-effect', '-3'], /--min-effect takes a number/, 2],
  ];
  const stderr = process.stderr.write.bind(process.stderr);
  for (const [argv, message, code] of cases) {
    let said = '';
    process.stderr.write = ((s: string) => {
      said += s;
      return true;
    }) as typeof process.stderr.write;
    const json = file('never.json');
    rmSync(json, { force: true });
    let r: { code: number; out: string; err: string };
    try {
      r = await bench(argv[0] === 'compare' ? argv : ['--json', json, ...argv]);
    } finally {
      process.stderr.write = stderr;
    }
    const first = said.split('\n')[0] ?? '';
    t.equal(r.code, code, `${argv.join(' ')}: exit ${code}`);
    t.match(first, message, `${argv.join(' ')}: ${first}`);
    t.notMatch(said + r.out, /\n\s+at .+:\d+:\d+/, 'no stack trace');
    t.throws(() => readFileSync(json), 'no report written');
  }

  // As a process: an unreachable URL (a port nothing listens on) and a usage error.
  const closed = await startFakeLedger();
  const deadUrl = closed.url;
  await closed.close();
  const dead = await cairn(['--url', deadUrl, '--batches', '5']);
  t.equal(dead.code, 1);
  t.match(dead.stderr, new RegExp(`^cairn bench: cannot reach ${deadUrl} \\(ECONNREFUSED\\)`));
  t.equal(dead.stderr.trim().split('\n').length, 1, 'one line');
  const usage = await cairn(['--url', deadUrl, '--batches', 'abc']);
  t.equal(usage.code, 2);
  t.equal(
    usage.stderr,
    'cairn bench: --batches takes a whole number, got "abc" (cairn bench --help shows the usage)\n',
    'one line, as every command',
  );
  t.equal((await cairn(['--help'])).code, 0, '--help exits 0');

  // The same checks in the bench/ scripts (before any node starts). Run through tsx, outside
  // the coverage of the tests: bench/ is not the package's code.
  const plain: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('TAP') && !k.startsWith('NODE_') && !k.startsWith('_TAPJS')) plain[k] = v;
  const script = async (env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string; stdout: string }> => {
    try {
      const r = await exec(process.execPath, ['--import', 'tsx', 'bench/submit.ts'], { env: { ...plain, ...env }, timeout: 60_000 });
      return { code: 0, stderr: r.stderr, stdout: r.stdout };
    } catch (e) {
      return e as { code: number; stderr: string; stdout: string };
    }
  };
  const bad = await Promise.all([script({ CONNECTIONS: '0' }), script({ BATCHES: 'abc' }), script({ TXNS: '-1' })]);
  for (const [r, re] of [
    [bad[0], /^submit\.ts: CONNECTIONS must be a whole number from 1 to 4096, got "0"\n$/],
    [bad[1], /^submit\.ts: BATCHES must be a whole number from 1 to 100000000, got "abc"\n$/],
    [bad[2], /^submit\.ts: TXNS must be a whole number from 1 to 1000, got "-1"\n$/],
  ] as const) {
    t.equal(r?.code, 2, 'bench/submit.ts: exit 2');
    t.match(r?.stderr, re, 'one line naming the setting');
    t.equal(r?.stdout, '', 'no figures');
  }
});
