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
import { fileURLToPath } from 'node:url';

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
const SALT = `${SWC_VERSION}\0${JSON.stringify(OPTIONS)}`;

const relative = (s) => s.startsWith('./') || s.startsWith('../') || s.startsWith('/') || s.startsWith('file:');
const ours = (url) => url?.startsWith('file:') && !url.includes('/node_modules/');

export async function resolve(specifier, context, next) {
  if (relative(specifier) && specifier.endsWith('.js') && ours(context.parentURL)) {
    const ts = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
    if (existsSync(ts)) return next(ts.href, context);
  }
  return next(specifier, context);
}

/** Where the compiled code of `source` (read from `path`) is kept. */
export function cacheFile(path, source) {
  return `${CACHE}${createHash('sha256').update(`${SALT}\0${path}\0${source}`).digest('hex')}.js`;
}

export async function load(url, context, next) {
  if (!ours(url)) return next(url, context);
  const path = fileURLToPath(url);
  if (!/\.m?ts$/.test(path)) return next(url, context);
  const source = readFileSync(path, 'utf8');
  const file = cacheFile(path, source);
  let code;
  try {
    code = readFileSync(file, 'utf8');
  } catch {
    swc ??= require('@swc/core');
    code = swc.transformSync(source, { ...OPTIONS, filename: path }).code;
    try {
      mkdirSync(CACHE, { recursive: true });
      const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
      writeFileSync(tmp, code);
      renameSync(tmp, file);
    } catch {
      // not writable: compiled again next time
    }
  }
  return { format: 'module', source: code, shortCircuit: true };
}
