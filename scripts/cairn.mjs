#!/usr/bin/env -S node --initial-old-space-size=64
/**
 * The package's `cairn` command (package.json "bin"; the npm scripts call it too).
 * `cairn start …` runs the node exactly as `npm start` does (scripts/start.mjs: compiles
 * dist/ when a source changed, then runs it in this process, so signals reach the node).
 * Every other command runs from the TypeScript sources through tsx, with no build step, as
 * the npm scripts did before; without tsx (an install that omitted devDependencies) it runs
 * from the build.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

if (process.argv[2] === 'start') {
  process.argv.splice(2, 1);
  await import('./start.mjs');
} else {
  let entry = join(root, 'src', 'cli', 'cairn.ts');
  try {
    const { register } = await import('tsx/esm/api');
    register();
  } catch {
    entry = join(root, 'dist', 'src', 'cli', 'cairn.js');
    if (!existsSync(entry)) {
      process.stderr.write('cairn: neither tsx (npm ci installs it) nor a build (npm run build) is available\n');
      process.exit(1);
    }
  }
  const { run, runCommand, USAGE, wantsJson } = await import(pathToFileURL(entry).href);
  await runCommand('cairn', USAGE, () => run(process.argv.slice(2)), wantsJson(process.argv.slice(2)));
}
