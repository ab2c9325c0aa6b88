// The tests' TypeScript loader: `node --import ./test/loader/register.mjs file.ts` (tap's
// node-arg, and the child processes the tests spawn, through TS_ARGS in test/helpers/child.ts).
// It only strips types (swc, no type check: `npm run typecheck` does that), keeps the layout
// of the code, and writes an inline source map, so V8's coverage maps back to the sources line
// by line (the map names the source file, which the coverage report reads from disk). It
// starts about a second sooner per process than tap's ts-node loader.
//
// On a process's main thread it also brings the tests' compiled copy of the sources up to
// date (test-js.mjs) and names it in CAIRN_DEV_BUILD. The process then loads the package's
// modules from the copy (hooks.mjs), and the threads it starts (src/ledger/worker-file.ts) and
// the nodes and CLIs the tests start (test/helpers/child.ts) run from it without loaders. Under
// tap's coverage, the coverage of what this process starts is V8's own (NODE_V8_COVERAGE into
// .tap/coverage, where tap's report reads every file; V8 writes the format tap's recorder
// writes, for each process and thread), and tap's recorder (@tapjs/processinfo, ~1.2 CPU-s a
// process, ~0.4 a thread) is kept out of them: out of NODE_OPTIONS, and out of what tap's spawn
// hook (process-on-spawn) adds to each child's. Where the test file's coverage counts nothing
// (test/coverage-map.mjs: the walk-throughs), its children get neither (the hook had put the
// recorder back into every `npm` and node of a walk-through: twice their CPU). Not where the
// test file's coverage is limited to some files (the bench tests), as V8's own cannot be
// limited: those keep tap's recorder and the loader everywhere. CAIRN_TEST_JS=0 turns the copy
// off.
import { createRequire, register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const env = process.env;
const RECORDER = '@tapjs/processinfo';
const withoutRecorder = (options) =>
  options
    .split(/\s+/)
    .filter((o) => o && !o.includes(RECORDER))
    .join(' ');

let devBuild = null;
if (isMainThread && env.CAIRN_TEST_JS !== '0' && !env._TAPJS_PROCESSINFO_COV_FILES_) {
  const { ensureTestJs } = await import('./test-js.mjs');
  devBuild = ensureTestJs();
  env.CAIRN_DEV_BUILD = devBuild;
  let onSpawn;
  try {
    onSpawn = createRequire(import.meta.url)('process-on-spawn');
  } catch {
    onSpawn = undefined; // not tap's spawn hook as this knows it: tap's recorder stays
  }
  // Coverage counts nothing from this file (test/coverage-map.mjs: the walk-throughs): no
  // child needs the recorder either.
  const uncounted = env._TAPJS_PROCESSINFO_COVERAGE_ === '0';
  if ((env._TAPJS_PROCESSINFO_COVERAGE_ === '1' || uncounted) && onSpawn) {
    if (!uncounted) env.NODE_V8_COVERAGE = `${env._TAPJS_PROCESSINFO_CWD_ || process.cwd()}/.tap/coverage`;
    if (env.NODE_OPTIONS) env.NODE_OPTIONS = withoutRecorder(env.NODE_OPTIONS);
    // After tap's own listener: a child that V8 covers gets no recorder.
    onSpawn.addListener((opts) => {
      if ((uncounted || opts.env.NODE_V8_COVERAGE) && opts.env.NODE_OPTIONS) opts.env.NODE_OPTIONS = withoutRecorder(opts.env.NODE_OPTIONS);
    });
  }
}

register('./hooks.mjs', { parentURL: import.meta.url, data: { devBuild } });
