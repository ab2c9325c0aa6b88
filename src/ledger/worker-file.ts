/** Where the ledger's worker entries are, from sources or from the build. */
import { fileURLToPath } from 'node:url';

const fromSource = import.meta.url.endsWith('.ts');

/**
 * Path of a worker entry. Running from TypeScript sources (tests, tsx), a small .mjs
 * entry registers the tsx loader inside the worker first: loader flags given to the
 * parent do not reliably apply to a worker's first module.
 */
export const workerFile = (name: string): string =>
  fileURLToPath(new URL(`../../workers/${fromSource ? `dev-${name}.mjs` : `${name}.js`}`, import.meta.url));
