#!/usr/bin/env node
/**
 * `npm test`: runs tap (every argument passed through), first bringing what a fresh clone on a
 * fresh Debian machine lacks, so that `npm ci && npm test` completes there:
 *
 * - tap's Test class built for the plugin list of package.json. tap rebuilds it on the first
 *   run after `npm ci`, but only for the next run: that first run starts its test processes
 *   with tap's default loaders beside ours (correct, about 1.5 times slower). So when the built
 *   plugin set differs from the configured one (or cannot be read), `tap build` runs first.
 * - etcd (Debian's etcd-server), which the cluster tests run for real. When `etcd` is not on
 *   PATH, it is installed with apt-get where that can be done without asking (root, or sudo
 *   without a password), as .ci/run does; CAIRN_TEST_NO_INSTALL=1 says never to. Where it
 *   cannot be installed, every other file runs (the coverage gate is then reported but does
 *   not fail the run: the cluster's sources are not exercised) and one line at the end names
 *   the files not run and the command that enables them. A missing system package never
 *   fails the run.
 *
 * - dist/ built (scripts/start.mjs with CAIRN_BUILD_ONLY=1) when a source changed, once, before
 *   the walk-throughs that run `npm start` side by side would each compile it.
 *
 * The output is tap's own (its summary `# { total: … }` and each file's `ok N - test/… #
 * time=…ms` line, which .ci/run reads), and the exit status is tap's.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
process.chdir(ROOT);
const TAP = join(ROOT, 'node_modules', '.bin', 'tap');
const args = process.argv.slice(2);

/** Whether an executable `name` is on PATH. */
function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/** Runs a command with inherited output; true when it exits 0. */
function run(cmd, argv, env = process.env) {
  const r = spawnSync(cmd, argv, { stdio: 'inherit', env });
  return r.status === 0;
}

/** Whether tap's built Test class carries the plugin set that package.json configures. */
async function tapBuilt() {
  try {
    const { TapConfig } = await import('@tapjs/config');
    const want = (await TapConfig.load()).pluginSignature;
    const built = readFileSync(join(ROOT, 'node_modules', '@tapjs', 'test', 'test-built', 'dist', 'esm', 'index.js'), 'utf8');
    return /^export const signature = `([^`]*)`/m.exec(built)?.[1] === want;
  } catch {
    return false; // cannot tell: build, which costs seconds and is always correct
  }
}

/** Installs Debian's etcd-server where that needs no password; true when `etcd` is then on PATH. */
function installEtcd() {
  if (process.env.CAIRN_TEST_NO_INSTALL === '1' || !onPath('apt-get')) return false;
  const root = process.getuid?.() === 0;
  const sudo = !root && onPath('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  if (!root && !sudo) return false;
  const asRoot = (argv) => (root ? run(argv[0], argv.slice(1)) : run('sudo', ['-n', ...argv]));
  console.log('etcd is not on PATH: installing etcd-server with apt-get (CAIRN_TEST_NO_INSTALL=1 skips this)');
  asRoot(['apt-get', 'update', '-qq']) && asRoot(['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '-qq', 'etcd-server']);
  return onPath('etcd');
}

/**
 * The test files that run the `etcd` binary: those that start etcd through the helpers
 * (helpers/etcd.ts, helpers/cluster.ts), spawn it, or run docs/cluster.md's walk-through. A
 * file that asks etcdAvailable() itself skips what needs etcd and runs anyway.
 */
function etcdFiles() {
  const uses = /helpers\/(etcd|cluster)\.js'|spawn\(\s*'etcd'|docs\/cluster\.md/;
  return readdirSync(join(ROOT, 'test'))
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => `test/${f}`)
    .filter((f) => {
      const text = readFileSync(join(ROOT, f), 'utf8');
      return uses.test(text) && !text.includes('etcdAvailable()');
    })
    .sort();
}

if (!(await tapBuilt())) {
  console.log("tap's built plugin set differs from package.json's: tap build");
  run(TAP, ['build']);
}

// The walk-throughs run `npm start`, which compiles dist/ when a source changed; tap starts the
// slowest files first, side by side, and each would compile it at the same time.
run(process.execPath, [join(ROOT, 'scripts', 'start.mjs')], { ...process.env, CAIRN_BUILD_ONLY: '1' });

let notRun = [];
let tapArgs = [...args];
if (!onPath('etcd') && !installEtcd()) {
  // Files named on the command line: those of them are left out (tap's --exclude applies to
  // its include globs only); none named: every such file, excluded from the globs.
  const isFile = (a) => /\.test\.ts$/.test(a);
  const named = args.filter(isFile).map((a) => a.replace(/^\.\//, ''));
  notRun = etcdFiles().filter((f) => named.length === 0 || named.includes(f));
  if (named.length === 0) tapArgs.push(...notRun.map((f) => `--exclude=${f}`));
  else tapArgs = tapArgs.filter((a) => !isFile(a) || !notRun.includes(a.replace(/^\.\//, '')));
  tapArgs.push('--allow-incomplete-coverage');
  if (named.length > 0 && !tapArgs.some(isFile)) tapArgs = null; // every file named needs etcd
}

const r = tapArgs ? spawnSync(TAP, tapArgs, { stdio: 'inherit' }) : { status: 0 };
if (notRun.length > 0)
  console.log(
    `# not run, no etcd on PATH (coverage gate not enforced): ${notRun.join(' ')}; \`sudo apt-get install etcd-server\` (Debian's etcd, 3.4) enables them`,
  );
process.exit(r.status ?? 1);
