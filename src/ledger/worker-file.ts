/** Where the ledger's worker entries are, from sources or from the build, and how a thread starts. */
import type { WorkerOptions } from 'node:worker_threads';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const fromSource = import.meta.url.endsWith('.ts');

/**
 * Path of a worker entry. Running from TypeScript sources (tests, tsx), a small .mjs
 * entry registers the tsx loader inside the worker first: loader flags given to the
 * parent do not reliably apply to a worker's first module.
 */
export const workerFile = (name: string): string =>
  fileURLToPath(new URL(`../../workers/${fromSource ? `dev-${name}.mjs` : `${name}.js`}`, import.meta.url));

/**
 * Whether this process runs from CAIRN_DEV_BUILD: a compiled copy of the sources laid out as
 * dist/ is (the tests' copy, test/loader/test-js.mjs), in a process that also has module
 * loaders for its TypeScript files.
 */
const devBuild = process.env.CAIRN_DEV_BUILD;
const fromDevBuild = !!devBuild && fileURLToPath(import.meta.url).startsWith(join(devBuild, sep));

/** A node flag that installs module hooks or loads modules before the entry (`--import x`, `--loader=x`); its value may be the next argument. */
const LOADER_FLAG = /^--(import|loader|experimental-loader)(=|$)/;

/** `argv` (node flags) without those that install module hooks or load modules first. */
export function withoutLoaders(argv: readonly string[]): string[] {
  const out: string[] = [];
  let value = false; // the flag before was a loader flag whose value is this argument
  for (const flag of argv) {
    const m: RegExpExecArray | null = value ? null : LOADER_FLAG.exec(flag);
    if (value) value = false;
    else if (m) value = m[2] === '';
    else out.push(flag);
  }
  return out;
}

/**
 * What a thread starts with besides its entry. From CAIRN_DEV_BUILD, the process's flags
 * without those that load modules: the copy needs no loader, and in Node 20 a loader costs
 * each thread a loader thread of its own, more than its modules take to load. Otherwise
 * nothing: the process's flags, as Node gives them to a thread.
 */
export const workerStart = (): Pick<WorkerOptions, 'execArgv'> => (fromDevBuild ? { execArgv: withoutLoaders(process.execArgv) } : {});
