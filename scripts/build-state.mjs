/**
 * Whether dist/ (the build of `npm run build`) is current: its stamp (dist/.build-stamp,
 * written after each build by scripts/start.mjs) is newer than every source (src/, workers/,
 * package.json and the tsconfig files) and dist/src/main.js exists. Used by `npm start`
 * (scripts/start.mjs: build when stale), `npm run build` (scripts/build.mjs: build, always)
 * and the `cairn` command (scripts/cairn.mjs: run the build when it is current, else the
 * sources through tsx).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const STAMP = join(ROOT, 'dist', '.build-stamp');
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const SOURCES = ['src', 'workers', 'package.json', 'tsconfig.json', 'tsconfig.build.json'];

/** The newest modification time under `path` (0 when it does not exist). */
function newest(path) {
  let st;
  try {
    st = statSync(path);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const name of readdirSync(path)) max = Math.max(max, newest(join(path, name)));
  return max;
}

/** Whether dist/ was built after the last change to a source. */
export function distCurrent() {
  const built = newest(STAMP);
  if (built === 0 || newest(MAIN) === 0) return false;
  return Math.max(...SOURCES.map((p) => newest(join(ROOT, p)))) <= built;
}

/** Compiles dist/ (tsc -p tsconfig.build.json) and stamps it; the exit status of tsc. */
export function build() {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (r.status !== 0) return r.status ?? 1;
  mkdirSync(dirname(STAMP), { recursive: true });
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  return 0;
}
