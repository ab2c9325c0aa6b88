// The tests' TypeScript loader: `node --import ./test/loader/register.mjs file.ts` (tap's
// node-arg, and the child processes the tests spawn, through TS_ARGS in test/helpers/child.ts).
// It only strips types (swc, no type check: `npm run typecheck` does that), keeps the layout
// of the code, and writes an inline source map, so V8's coverage maps back to the sources
// line by line (the map names the source file, which the coverage report reads from disk).
// It starts about a second sooner per process than tap's ts-node loader.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
