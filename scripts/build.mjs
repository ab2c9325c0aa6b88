/**
 * `npm run build`: compiles dist/ (tsc -p tsconfig.build.json) whether or not a source
 * changed, and stamps it (dist/.build-stamp), so that `npm start` and the `cairn` command
 * take the build as current (scripts/build-state.mjs) instead of building again.
 */
import { build } from './build-state.mjs';

process.exit(build());
