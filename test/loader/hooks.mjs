// Module hooks of test/loader/register.mjs: `.ts` files of this package (outside
// node_modules) are compiled by swc; an import of `./x.js` resolves to `./x.ts` where that
// exists, as TypeScript's NodeNext resolution writes it.
//
// Every test process and every node or CLI process a test starts loads about 200 of these
// files on each of its threads, so two costs per load matter (about 0.6 s of a child node's
// 2.5 s start on the 2-core machine):
// - the `.ts` file is tried first for this package's own `./x.js` imports, instead of after
//   the default resolver failed to find `./x.js` (an error built and thrown per import);
// - swc's output is kept in node_modules/.cache/cairn-swc, named by a hash of the source, its
//   path (the inline source map names it), the options and swc's version: a file compiled once
//   is read back, not compiled again, by every later process. A changed source has another
//   name. Written to a temporary name, then renamed (processes start side by side); where it
//   cannot be written, the file is compiled each time, as before. swc is loaded only on a
//   miss.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const SWC_VERSION = require('@swc/core/package.json').version;
/** swc itself, loaded at the first file not in the cache: most processes and threads never need it (40 ms each). */
let swc = null;

const OPTIONS = {
  swcrc: false,
  sourceMaps: 'inline',
  inlineSourcesContent: false,
  isModule: true,
  module: { type: 'es6' },
  jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
};

const CACHE = fileURLToPath(new URL('../../node_modules/.cache/cairn-swc/', import.meta.url));
export const SALT = `${SWC_VERSION}\0${JSON.stringify(OPTIONS)}`;

const pathSpecifier = (s) => s.startsWith('./') || s.startsWith('../') || s.startsWith('/') || s.startsWith('file:');
const ours = (url) => url?.startsWith('file:') && !url.includes('/node_modules/');

/** The package's root, and the tests' compiled copy of its sources when register.mjs made one (test-js.mjs). */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
let devBuild = null;

export function initialize(data) {
  devBuild = data?.devBuild ?? null;
}

export async function resolve(specifier, context, next) {
  if (pathSpecifier(specifier) && specifier.endsWith('.js') && ours(context.parentURL)) {
    // A module of src/ or workers/ comes from the compiled copy where there is one: every
    // process and thread of the tests then runs the same files under the same URLs, and
    // their coverage merges as one (merged across URLs, tap's report miscounts branches).
    if (devBuild) {
      const path = fileURLToPath(new URL(specifier, context.parentURL));
      const built = join(devBuild, relative(ROOT, path));
      if ((path.startsWith(`${ROOT}src${sep}`) || path.startsWith(`${ROOT}workers${sep}`)) && existsSync(built))
        return next(pathToFileURL(built).href, context);
    }
    const ts = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
    if (existsSync(ts)) return next(ts.href, context);
  }
  return next(specifier, context);
}

/** Where the compiled code of `source` (read from `path`) is kept. */
export function cacheFile(path, source) {
  return `${CACHE}${createHash('sha256').update(`${SALT}\0${path}\0${source}`).digest('hex')}.js`;
}

/** Writes `path` whole or not at all (a temporary name, then renamed): processes start side by side. */
export function writeAtomic(path, text) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/**
 * The compiled code of the TypeScript file at `path`: from the cache when it was compiled
 * before, else compiled by swc and kept. Also what the tests' compiled copy of the sources is
 * made of (test/loader/test-js.mjs): the same code, so its coverage maps back the same way.
 */
export function compile(path, source = readFileSync(path, 'utf8')) {
  const file = cacheFile(path, source);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    swc ??= require('@swc/core');
    const code = swc.transformSync(source, { ...OPTIONS, filename: path }).code;
    try {
      writeAtomic(file, code);
    } catch {
      // not writable: compiled again next time
    }
    return code;
  }
}

export async function load(url, context, next) {
  if (!ours(url)) return next(url, context);
  const path = fileURLToPath(url);
  if (!/\.m?ts$/.test(path)) return next(url, context);
  return { format: 'module', source: compile(path), shortCircuit: true };
}
