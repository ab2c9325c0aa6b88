/**
 * `prestart`: compiles the node only when a source file changed since the last build, so
 * `npm start` listens in well under a second on every start after the first. The stamp is
 * dist/.build-stamp; sources are src/, workers/, package.json and the tsconfig files.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const STAMP = join('dist', '.build-stamp');

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

const sources = Math.max(...['src', 'workers', 'package.json', 'tsconfig.json', 'tsconfig.build.json'].map(newest));
const built = newest(STAMP);
if (built === 0 || sources > built || newest(join('dist', 'src', 'main.js')) === 0) {
  process.stderr.write('building dist/ (tsc -p tsconfig.build.json) ...\n');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
  mkdirSync('dist', { recursive: true });
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
}
