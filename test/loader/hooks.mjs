// Module hooks of test/loader/register.mjs: `.ts` files of this package (outside
// node_modules) are compiled by swc; an import of `./x.js` that does not exist resolves to
// `./x.ts`, as TypeScript's NodeNext resolution writes it.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const { transformSync } = createRequire(import.meta.url)('@swc/core');

const OPTIONS = {
  swcrc: false,
  sourceMaps: 'inline',
  inlineSourcesContent: false,
  isModule: true,
  module: { type: 'es6' },
  jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
};

const relative = (s) => s.startsWith('./') || s.startsWith('../') || s.startsWith('/') || s.startsWith('file:');

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !relative(specifier) || !/\.js$/.test(specifier)) throw err;
    return next(`${specifier.slice(0, -3)}.ts`, context);
  }
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || url.includes('/node_modules/')) return next(url, context);
  const path = fileURLToPath(url);
  if (!/\.m?ts$/.test(path)) return next(url, context);
  const source = await readFile(path, 'utf8');
  const { code } = transformSync(source, { ...OPTIONS, filename: path });
  return { format: 'module', source: code, shortCircuit: true };
}
