#!/usr/bin/env -S node --initial-old-space-size=64
/**
 * The package's `cairn` command (package.json "bin"; the npm scripts call it too).
 * `cairn start …` runs the node exactly as `npm start` does (scripts/start.mjs: compiles
 * dist/ when a source changed, then runs it in this process, so signals reach the node).
 * Every other command runs from the build when dist/ is current (scripts/build-state.mjs:
 * built after the last change to a source; a command then starts in about 0.2 s instead of
 * about 0.7 s), else from the TypeScript sources through tsx, with no build step; without
 * tsx (an install that omitted devDependencies) it runs from whatever build there is.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, distCurrent } from './build-state.mjs';

if (process.argv[2] === 'start') {
  process.argv.splice(2, 1);
  await import('./start.mjs');
} else {
  const built = join(ROOT, 'dist', 'src', 'cli', 'cairn.js');
  let entry = built;
  if (!distCurrent()) {
    try {
      const { register } = await import('tsx/esm/api');
      register();
      entry = join(ROOT, 'src', 'cli', 'cairn.ts');
    } catch {
      if (!existsSync(built)) {
        process.stderr.write('cairn: neither tsx (npm ci installs it) nor a build (npm run build) is available\n');
        process.exit(1);
      }
    }
  }
  const { run, runCommand, USAGE, wantsJson } = await import(pathToFileURL(entry).href);
  await runCommand('cairn', USAGE, () => run(process.argv.slice(2)), wantsJson(process.argv.slice(2)));
}
