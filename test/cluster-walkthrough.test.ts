/**
 * docs/cluster.md's walk-through runs as written: three etcd members, `cairn cluster init`,
 * three members started with `npm start`, a batch to each, the same head on all three,
 * /peers, /status and `cairn cluster status`, then everything stopped and removed.
 *
 * As test/walkthrough.test.ts does for README.md and docs/*.md (same convention: a ```sh
 * block directly preceded by `<!-- walkthrough -->`): the marked blocks run in order,
 * unchanged but for their ports, in one bash session with `set -Eeuo pipefail`, from a fresh
 * directory that links the package. Every port the document names (etcd's client and peer
 * ports, each member's three interfaces) is replaced, as a whole number everywhere in the
 * blocks, by a free port picked at random below the kernel's ephemeral range (so that no
 * outgoing connection takes it before the process that listens on it starts, and two runs,
 * or an etcd already on 2379, do not collide). TMPDIR is the sandbox's, so the document's
 * `mktemp -d` work directory is inside it.
 *
 * The assertions read the output: etcd healthy three times, the chain created, four batches
 * committed, three equal head ids at the same height, the values on a member that took only
 * one of them, the other two members in /peers, three live members in /status and in
 * `cluster status`, and `cairn check` clean on each member's data directory once it stopped.
 * Whatever the session left running (its process group: etcd, npm, the nodes) is stopped
 * afterwards, and killed if the test process itself dies.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from './helpers/ports.js';
import { LINKED, ROOT, portOpen, walkthroughBlocks } from './helpers/walkthrough.js';

const DOC = 'docs/cluster.md';

/** The ports docs/cluster.md names, by role (each list in the document's member order). */
const PORTS = {
  etcdClient: [2379, 22379, 32379],
  etcdPeer: [2380, 22380, 32380],
  ledger: [8008, 8018, 8028],
  node: [8085, 8095, 8105],
  data: [8080, 8090, 8100],
};
const FIXED = Object.values(PORTS).flat();
const MEMBERS = ['m1', 'm2', 'm3'];
const RUN_LIMIT_MS = 150_000;

/** `script` with each port of `map` (as a whole number, not part of another number or of a version like 3.4.23) replaced. */
function substitutePorts(script: string, map: ReadonlyMap<number, number>): string {
  const re = new RegExp(`(?<![\\d.])(${[...map.keys()].join('|')})(?!\\d)`, 'g');
  return script.replace(re, (m) => String(map.get(Number(m))));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops a process group: SIGTERM, then SIGKILL after `graceMs`; resolves once it is gone. */
async function stopGroup(pgid: number, graceMs: number): Promise<void> {
  if (!groupAlive(pgid)) return;
  try {
    process.kill(-pgid, 'SIGTERM');
  } catch {
    return;
  }
  const until = Date.now() + graceMs;
  while (groupAlive(pgid) && Date.now() < until) await sleep(100);
  if (!groupAlive(pgid)) return;
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    return;
  }
  while (groupAlive(pgid)) await sleep(50);
}

/**
 * Runs a script in a process group of its own; resolves with its exit code, its output and,
 * when it failed, `onFailure()` taken before anything is stopped, once nothing of the group
 * runs any more. A watchdog shell SIGKILLs the group and removes `cwd`
 * if this process dies first (its stdin closes without the line that releases it).
 */
function runBash(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  onFailure: () => string,
): Promise<{ code: number | null; out: string; err: string; failure: string }> {
  return new Promise((res) => {
    const file = join(cwd, 'walk.sh');
    writeFileSync(file, script);
    const p = spawn('bash', [file], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const pgid = p.pid as number;
    const watchdog = spawn('sh', ['-c', 'read -r _ && exit 0; kill -9 "-$1" 2>/dev/null; sleep 1; rm -rf "$2"', 'watchdog', String(pgid), cwd], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    watchdog.on('error', () => {});
    watchdog.stdin.on('error', () => {});
    watchdog.unref();
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      err += `\n(walk-through timed out after ${timeoutMs} ms)`;
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    p.on('close', async (code) => {
      clearTimeout(timer);
      const failure = code === 0 ? '' : onFailure();
      // Whatever the walk-through left running (it failed before its last block).
      await stopGroup(pgid, 15_000);
      watchdog.stdin.end('done\n');
      res({ code, out, err, failure });
    });
  });
}

const HEADER = `set -Eeuo pipefail
trap 'echo "WALKTHROUGH FAILED (exit $?) at: $BASH_COMMAND" >&2' ERR
`;

/** The last lines of each log in the work directories left under `tmp` (a failed run keeps them). */
function logTails(tmp: string): string {
  const out: string[] = [];
  for (const d of existsSync(tmp) ? readdirSync(tmp) : []) {
    const dir = join(tmp, d);
    let names: string[];
    try {
      names = readdirSync(dir).filter((f) => f.endsWith('.log'));
    } catch {
      continue;
    }
    for (const f of names) out.push(`--- ${f}\n${readFileSync(join(dir, f), 'utf8').trimEnd().split('\n').slice(-15).join('\n')}`);
  }
  return out.join('\n');
}

t.test(`${DOC}: the marked shell blocks run as written, on free ports`, async (t) => {
  const blocks = walkthroughBlocks(readFileSync(join(ROOT, DOC), 'utf8'));
  t.ok(blocks.length >= 6, `the document has its marked blocks (${blocks.length})`);
  const script = blocks.join('\n');

  // The test knows every port the document names, and the document names every port the test moves.
  const named = new Set([...script.matchAll(/127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1])).filter((p) => p !== 0));
  t.same(
    [...named].filter((p) => !FIXED.includes(p)),
    [],
    'every 127.0.0.1 port of the blocks is one the test moves',
  );
  for (const p of FIXED) t.match(script, new RegExp(`(?<![\\d.])${p}(?!\\d)`), `the blocks name port ${p}`);

  const dir = mkdtempSync(join(tmpdir(), 'cairn-cluster-walk-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const f of LINKED) if (existsSync(join(ROOT, f))) symlinkSync(join(ROOT, f), join(dir, f));
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp);

  const free = await freePorts(FIXED.length);
  const map = new Map(FIXED.map((p, i) => [p, free[i] as number]));
  const moved = (p: number): number => map.get(p) as number;
  t.comment(`ports: ${[...map].map(([a, b]) => `${a}->${b}`).join(' ')}`);

  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CAIRN_') || k.startsWith('TAP') || k.startsWith('ETCD_')) delete env[k];
  Object.assign(env, { TMPDIR: tmp, CAIRN_POOL_THREADS: '1', CAIRN_BCRYPT_COST: '4' });

  const started = Date.now();
  const r = await runBash(HEADER + substitutePorts(script, map), dir, env, RUN_LIMIT_MS, () => logTails(tmp));
  t.comment(`walk-through ran in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const failed = /WALKTHROUGH FAILED[^\n]*/.exec(r.err)?.[0];
  t.equal(r.code, 0, failed ?? `exit ${r.code}`, {
    stderr: r.err.split('\n').slice(-25).join('\n'),
    stdout: r.out.split('\n').slice(-25).join('\n'),
    logs: r.failure,
  });
  const out = r.out;

  t.equal(out.match(/^\{"health":"true"\}$/gm)?.length, 3, 'the three etcd members were healthy');
  const init = /^chain created: key ([0-9a-f]{66}) \(in .*\), genesis ([0-9a-f]{128})\b/m.exec(out);
  t.ok(init, 'cairn cluster init created the chain');

  for (const line of ['set a 1', 'set b 2', 'set c 3', 'inc a 10'])
    t.match(out, new RegExp(`^${line}: batch [0-9a-f]{128} COMMITTED$`, 'm'), `${line} committed`);

  const heads = [...out.matchAll(/^(\d+): block (\d+) ([0-9a-f]{128})$/gm)].map((m) => ({ port: Number(m[1]), num: Number(m[2]), id: m[3] }));
  t.same(
    heads.map((h) => h.port),
    PORTS.ledger.map(moved),
    'a head line from each member',
  );
  t.ok(heads[0]?.id, 'the head id is not empty');
  t.ok(
    heads.every((h) => h.id === heads[0]?.id && h.num === heads[0]?.num),
    `the same head block on all three (${heads.map((h) => `${h.num} ${h.id?.slice(0, 16)}`).join(', ')})`,
  );
  t.ok((heads[0]?.num ?? 0) >= 4, 'the head is past the four batches (one block each)');
  t.match(out, /^a: 11\nb: 2\nc: 3$/m, 'the third member has every value, whichever member took it');

  const lines = out.split('\n');
  const peers = lines.find((l) => l.startsWith('["http'));
  t.same(
    peers && JSON.parse(peers),
    PORTS.ledger.slice(1).map((p) => `http://127.0.0.1:${moved(p)}`),
    "/peers on m1 lists m2's and m3's ledger gateways",
  );
  const statusLine = lines.find((l) => l.startsWith('{"node_id"'));
  const cluster = statusLine ? JSON.parse(statusLine) : null;
  t.equal(cluster?.node_id, 'm2', "/status's cluster is m2's view");
  t.same(
    cluster?.members?.map((m: { node_id: string; ledger_url: string; live: boolean }) => [m.node_id, m.ledger_url, m.live]),
    MEMBERS.map((id, i) => [id, `http://127.0.0.1:${moved(PORTS.ledger[i] as number)}`, true]),
    'three live members with their ledger URLs',
  );
  t.type(cluster?.log?.lag, 'number', 'the log position is shown');

  t.match(out, `chain key ${init?.[1]}, genesis ${init?.[2]}`, 'cluster status shows the chain init made');
  const up = [...out.matchAll(/^up +(m\d) http:\/\/127\.0\.0\.1:(\d+) height (\d+) log (\d+)$/gm)]
    .map((m) => [m[1], Number(m[2])])
    .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
  t.same(
    up,
    MEMBERS.map((id, i) => [id, moved(PORTS.ledger[i] as number)]),
    'cluster status lists the three members up',
  );

  // Each member's data, checked by the walk-through once the members stopped: clean.
  const checked = [...out.matchAll(/^checked \S+\/(m\d): (\d+) blocks, .*: (clean \(0 problems\)|\d+ problems?)$/gm)].map((m) => [m[1], m[3]]);
  t.same(
    checked,
    MEMBERS.map((m) => [m, 'clean (0 problems)']),
    'cairn check: every member clean',
    { problems: out.split('\n').filter((l) => l.startsWith('PROBLEM')) },
  );

  // Everything stopped and removed.
  for (const port of free) t.notOk(await portOpen(port), `port ${port} is free afterwards`);
  t.same(
    readdirSync(tmp).filter((f) => f.startsWith('tmp.')),
    [],
    'the work directory was removed',
  );
  t.notOk(existsSync(join(dir, 'data')), 'nothing was written to ./data');
});
