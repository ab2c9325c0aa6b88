/**
 * The shell walk-throughs of README.md and docs/*.md run as written, and `npm start` stops
 * when its npm process is killed.
 *
 * Convention: a ```sh block directly preceded by the line `<!-- walkthrough -->` belongs to
 * its document's walk-through. A document's marked blocks run in order, unchanged, in one
 * bash session with `set -Eeuo pipefail`, from a fresh directory that links the package
 * (package.json, node_modules, src, workers, scripts, dist, tsconfig) so that `./data` is
 * new, with CAIRN_LEDGER_BIND / CAIRN_NODE_BIND / CAIRN_DATA_BIND set to free ports (the
 * docs derive their URLs from those variables, defaulting to the standard ports). The first
 * command that fails ends the run, and the test names it. Whatever is still running
 * afterwards (the session's process group) is killed.
 *
 * At its end every walk-through leaves data that `cairn check` finds clean: the test checks
 * ./data where a document keeps its node's data, and a document that removes its nodes' data
 * itself checks it first (its `clean` lines are counted).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from './helpers/ports.js';
import { runToExit } from './helpers/child.js';
import { LINKED, ROOT, portOpen, walkthroughBlocks } from './helpers/walkthrough.js';

interface Sandbox {
  dir: string;
  env: NodeJS.ProcessEnv;
  ports: { ledger: number; node: number; data: number };
}

async function sandbox(): Promise<Sandbox> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-walk-'));
  for (const f of LINKED) if (existsSync(join(ROOT, f))) symlinkSync(join(ROOT, f), join(dir, f));
  const [ledger, node, data] = (await freePorts(3)) as [number, number, number];
  const ports = { ledger, node, data };
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CAIRN_') || k.startsWith('TAP')) delete env[k];
  Object.assign(env, {
    CAIRN_LEDGER_BIND: `127.0.0.1:${ports.ledger}`,
    CAIRN_NODE_BIND: `127.0.0.1:${ports.node}`,
    CAIRN_DATA_BIND: `127.0.0.1:${ports.data}`,
    CAIRN_NETWORK_BIND: '127.0.0.1:0',
    CAIRN_COMPONENT_BIND: 'off',
    CAIRN_POOL_THREADS: '1',
    CAIRN_BCRYPT_COST: '4',
  });
  return { dir, env, ports };
}

/** Runs a script in its own process group; resolves with exit code and output, then kills the group. */
function runBash(script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((res) => {
    const file = join(cwd, 'walk.sh');
    writeFileSync(file, script);
    const p = spawn('bash', [file], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      err += `\n(walk-through timed out after ${timeoutMs} ms)`;
      try {
        process.kill(-p.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      // Anything the walk-through left running (e.g. a node it did not stop).
      try {
        process.kill(-p.pid!, 'SIGTERM');
      } catch {
        // nothing left
      }
      res({ code, out, err });
    });
  });
}

const HEADER = `set -Eeuo pipefail
trap 'echo "WALKTHROUGH FAILED (exit $?) at: $BASH_COMMAND" >&2' ERR
`;

/**
 * The documents whose marked blocks run. `fixedPorts`: ports a document names literally (it
 * starts nodes of its own on them); the test gives each a free port instead, everywhere in
 * the blocks, so it does not depend on them being free. `dataDir`: the walk-through keeps a
 * node's data in ./data. `checks`: the `cairn check` runs the document's own blocks make
 * (each must print `clean`).
 */
const DOCS: { doc: string; fixedPorts?: number[]; dataDir: boolean; checks: number }[] = [
  { doc: 'README.md', dataDir: true, checks: 0 },
  { doc: 'docs/node-api.md', dataDir: true, checks: 0 },
  { doc: 'docs/data-api.md', dataDir: true, checks: 0 },
  // Its node ran the processor's family: the check knows it (it called the batches damage).
  { doc: 'docs/transaction-processors.md', fixedPorts: [4004], dataDir: true, checks: 1 },
  {
    doc: 'docs/circuits.md',
    fixedPorts: [8108, 8109, 8110, 8185, 8186, 8187, 8180, 8181, 8182, 8144, 8145, 8146, 4104, 4105, 4106],
    dataDir: false,
    checks: 3,
  },
];

/** A `cairn check` summary that found nothing. */
const CLEAN = /^checked \S+: \d+ blocks, .*: clean \(0 problems\)$/gm;

/** `script` with each of `ports` (as a whole number) replaced by a free port, none of `avoid`; the ports given. */
export async function substitutePorts(
  script: string,
  ports: readonly number[],
  avoid: Iterable<number> = [],
): Promise<{ script: string; ports: number[] }> {
  if (ports.length === 0) return { script, ports: [] };
  const free = await freePorts(ports.length, avoid);
  const map = new Map(ports.map((p, i) => [String(p), String(free[i])]));
  const re = new RegExp(`(?<![\\d.])(${[...map.keys()].join('|')})(?!\\d)`, 'g');
  return { script: script.replace(re, (m) => map.get(m)!), ports: free };
}

for (const { doc, fixedPorts = [], dataDir, checks } of DOCS) {
  t.test(`${doc}: the marked shell blocks run as written`, async (t) => {
    const blocks = walkthroughBlocks(readFileSync(join(ROOT, doc), 'utf8'));
    t.ok(blocks.length > 0, 'the document has marked blocks');
    const sb = await sandbox();
    t.teardown(() => rmSync(sb.dir, { recursive: true, force: true }));
    const own = await substitutePorts(blocks.join('\n'), fixedPorts, Object.values(sb.ports));
    t.equal(own.ports.length, fixedPorts.length, 'each fixed port of the document is moved');
    const r = await runBash(HEADER + own.script, sb.dir, sb.env, 150_000);
    const failed = /WALKTHROUGH FAILED[^\n]*/.exec(r.err)?.[0];
    t.equal(r.code, 0, failed ?? `exit ${r.code}`, { stderr: r.err.split('\n').slice(-25).join('\n') });
    t.equal(r.out.match(CLEAN)?.length ?? 0, checks, `the document's own cairn check runs: clean (${checks})`, {
      problems: r.out.split('\n').filter((l) => /^(PROBLEM|checked )/.test(l)),
    });
    if (dataDir) {
      t.ok(existsSync(join(sb.dir, 'data', 'ledger.mdb')), 'the node kept its data in ./data');
      // The node stopped: its data directory, as the walk-through left it, is clean.
      const check = await runToExit(['src/cli/cairn.ts', 'check', '--data-dir', join(sb.dir, 'data')], sb.env);
      t.equal(check.code, 0, 'cairn check exits 0', { log: check.log });
      t.match(check.log, CLEAN, 'cairn check: clean');
      t.notMatch(check.log, /^PROBLEM/m);
    } else t.notOk(existsSync(join(sb.dir, 'data')), 'nothing was written to ./data');
    for (const port of [...Object.values(sb.ports), ...own.ports])
      t.notOk(await portOpen(port), `port ${port} is free afterwards (the walk-through stopped its nodes)`);
  });
}

t.test('kill of the npm start pid stops the node and frees its ports', async (t) => {
  const sb = await sandbox();
  t.teardown(() => rmSync(sb.dir, { recursive: true, force: true }));
  const npm = spawn('npm', ['start'], { cwd: sb.dir, env: sb.env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  npm.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((res) => npm.on('exit', () => res()));
  // The pipe closes once every process that holds it (npm, and the node it runs) has ended:
  // only then is the whole log read (a busy machine delivers the last lines after npm's exit).
  const logClosed = new Promise<void>((res) => npm.stderr.on('close', () => res()));
  const until = Date.now() + 90_000;
  while (!(await portOpen(sb.ports.data)) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  t.ok(await portOpen(sb.ports.data), 'the node listens');
  const Created = /data directory .*: new; genesis block written, keys created/;
  for (const by = Date.now() + 30_000; !Created.test(err) && Date.now() < by; ) await new Promise((r) => setTimeout(r, 50));
  t.match(err, Created, 'the log says where the data is and what was created');
  npm.kill('SIGTERM');
  await exited;
  const stopBy = Date.now() + 10_000;
  while ((await portOpen(sb.ports.ledger)) && Date.now() < stopBy) await new Promise((r) => setTimeout(r, 100));
  for (const port of Object.values(sb.ports)) t.notOk(await portOpen(port), `port ${port} is free`);
  await Promise.race([logClosed, new Promise((r) => setTimeout(r, 30_000).unref())]);
  t.match(err, /SIGTERM: shutting down[\s\S]*stopped/, 'the node shut down cleanly');
});
