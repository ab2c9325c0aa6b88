/**
 * An interleaved A/B of two builds on this machine, in one job: the base (the parent commit,
 * or BENCH_BASE_REF) unpacked from git into a temp directory, its node_modules hard-linked from
 * this checkout when the lockfiles match (else `npm ci` there), built with tsc; then runs of
 * `cairn bench` against a fresh node of each build, in the order ABBA ABBA…, and
 * `cairn bench compare`'s test (Welch's t-test on the per-run committed rates, a minimum
 * effect size). Both builds see the same machine at nearly the same time, so a slower or
 * busier machine moves both.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBenchNode } from './lib/node.js';
import { parseBenchArgs } from '../src/bench/options.js';
import { runBench, type BenchResult } from '../src/bench/bench.js';

export interface Base {
  dir: string;
  sha: string;
  cleanup(): void;
}

/** The base build ready to run, or why it cannot be had here (a shallow clone, no network for npm ci, a failed build). */
export function prepareBase(ref: string, log: (m: string) => void): Base | { reason: string } {
  const root = process.cwd();
  const run = (cmd: string, args: string[], cwd: string): { ok: boolean; out: string } => {
    const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
    return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
  };
  const rev = run('git', ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], root);
  if (!rev.ok) return { reason: `${ref} is not in this clone (a shallow clone?)` };
  const sha = rev.out.split('\n')[0] as string;
  const dir = mkdtempSync(join(tmpdir(), 'cairn-base-'));
  const fail = (reason: string): { reason: string } => {
    rmSync(dir, { recursive: true, force: true });
    return { reason };
  };
  const arch = spawnSync('sh', ['-c', `git archive ${sha} | tar -x -C '${dir}'`], { cwd: root, encoding: 'utf8' });
  if (arch.status !== 0) return fail(`git archive ${sha.slice(0, 12)} failed: ${arch.stderr.trim()}`);
  const lock = (d: string): string => (existsSync(join(d, 'package-lock.json')) ? readFileSync(join(d, 'package-lock.json'), 'utf8') : '');
  if (lock(root) !== '' && lock(root) === lock(dir)) {
    log(`base ${sha.slice(0, 12)}: same lockfile, node_modules hard-linked`);
    try {
      // cp -al: a hard-linked copy (no bytes copied); cpSync as the fallback where cp lacks -l.
      if (!run('cp', ['-al', join(root, 'node_modules'), join(dir, 'node_modules')], root).ok)
        cpSync(join(root, 'node_modules'), join(dir, 'node_modules'), { recursive: true });
    } catch (err) {
      return fail(`cannot copy node_modules: ${(err as Error).message}`);
    }
  } else {
    log(`base ${sha.slice(0, 12)}: another lockfile, npm ci`);
    const ci = run('npm', ['ci', '--no-audit', '--no-fund'], dir);
    if (!ci.ok) return fail(`npm ci for the base failed: ${ci.out.split('\n').slice(-3).join(' ')}`);
  }
  log(`base ${sha.slice(0, 12)}: building`);
  const build = run(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], dir);
  if (!build.ok || !existsSync(join(dir, 'dist/src/main.js'))) return fail(`the base build failed: ${build.out.split('\n').slice(0, 3).join(' ')}`);
  return { dir, sha, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** One `cairn bench` run against a fresh node of the build in `nodeDir`; its report. */
export async function benchBuild(nodeDir: string, args: string[]): Promise<BenchResult> {
  const before = process.env.BENCH_NODE_DIR;
  process.env.BENCH_NODE_DIR = nodeDir;
  const node = await startBenchNode();
  if (before === undefined) delete process.env.BENCH_NODE_DIR;
  else process.env.BENCH_NODE_DIR = before;
  const tmp = mkdtempSync(join(tmpdir(), 'cairn-ab-'));
  try {
    const file = join(tmp, 'run.json');
    // A failed run throws with its one-line reason.
    const io = { out: (): void => undefined, err: (): void => undefined, tty: false };
    await runBench(parseBenchArgs(['--url', node.ledgerUrl, ...args, '--quiet', '--json', file]).options, io);
    return JSON.parse(readFileSync(file, 'utf8')) as BenchResult;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
    await node.stop();
  }
}
