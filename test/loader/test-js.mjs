// The tests' compiled copy of the sources: `.test-js/src/…` and `.test-js/workers/…`, each
// `.ts` file as the loader compiles it (hooks.mjs: the same code and inline source map, which
// names the `.ts` file), laid out as dist/ is. A node, a CLI or a thread the tests start runs
// from it with no module loader at all, and V8's coverage of it maps back to the sources as the
// loader's does.
//
// Why: in Node 20 a module loader runs on a thread of its own, one per thread that uses it, and
// tap's coverage recorder (@tapjs/processinfo) adds its own hooks and a per-module record. A
// node started from the sources through both cost ~5 CPU-s on the 2-core machine, ~3 from this
// copy; a committer thread ~1.1 CPU-s, ~0.5 from it. The suite starts about a hundred nodes
// and a few hundred threads.
//
// ensureTestJs() brings the copy up to date: a stamp of every source's path, size and mtime
// (and the compiler's version and options) says whether anything changed; only files whose
// code changed are written (to a temporary name, then renamed: test processes start side by
// side), and files whose source is gone are removed.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile, SALT, writeAtomic } from './hooks.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIRS = ['src', 'workers'];

/** Every file under `dir` whose name passes `keep` (a missing folder: none). */
function walk(dir, keep, out = []) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, keep, out);
    else if (keep(e.name)) out.push(p);
  }
  return out;
}

const isSource = (name) => name.endsWith('.ts') && !name.endsWith('.d.ts');

const read = (p) => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
};

/** Brings `<root>/.test-js` up to date with the sources of `root` (this package's by default); returns its path. */
export function ensureTestJs(root = ROOT) {
  const out = join(root, '.test-js');
  const stampFile = join(out, '.stamp');
  const files = DIRS.flatMap((d) => walk(join(root, d), isSource)).map((p) => [p, statSync(p)]);
  const stamp = createHash('sha256')
    .update(SALT)
    .update(files.map(([p, s]) => `${p}\0${s.size}\0${s.mtimeMs}`).join('\n'))
    .digest('hex');
  if (read(stampFile) === stamp) return out;
  const wanted = new Set();
  for (const [p] of files) {
    const js = join(out, relative(root, p)).replace(/\.ts$/, '.js');
    wanted.add(js);
    const code = compile(p);
    if (read(js) !== code) writeAtomic(js, code);
  }
  for (const d of DIRS) for (const p of walk(join(out, d), (name) => name.endsWith('.js'))) if (!wanted.has(p)) rmSync(p, { force: true });
  writeAtomic(stampFile, stamp);
  return out;
}
