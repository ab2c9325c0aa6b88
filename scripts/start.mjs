/**
 * `npm start`: compiles the node only when a source file changed since the last build
 * (stamp dist/.build-stamp; sources are src/, workers/, package.json and the tsconfig
 * files), then runs dist/src/main.js in this same process. One process from `npm start`
 * down: the script is `exec node scripts/start.mjs`, so a signal npm forwards (kill of the
 * npm pid, Ctrl-C) reaches the node itself, with no shell in between to orphan it. The
 * build runs here rather than in `prestart` because npm skips pre-scripts under
 * ignore-scripts.
 *
 * `CAIRN_BUILD_ONLY=1` builds (when needed) and exits without starting the node: `npm test`
 * (scripts/test.mjs) builds once before the tests that run `npm start` side by side, so that
 * they do not each compile dist/ at the same time.
 *
 * The node runs with V8's `--initial-old-space-size=64` (package.json "start", the `cairn`
 * command's first line): where the first full collection of the main thread's heap comes,
 * not memory taken up front. From V8's default start a busy node ran a full mark-compact
 * every few hundred milliseconds at a small live heap (25 to 50 a circuit bench run on the
 * coordinator); the committer threads get the same setting (src/scabbard/committer-link.ts).
 */
import { pathToFileURL } from 'node:url';
import { MAIN, build, distCurrent } from './build-state.mjs';

if (!distCurrent()) {
  process.stderr.write('building dist/ (tsc -p tsconfig.build.json) ...\n');
  const status = build();
  if (status !== 0) process.exit(status);
}
if (process.env.CAIRN_BUILD_ONLY !== '1') await import(pathToFileURL(MAIN).href);
