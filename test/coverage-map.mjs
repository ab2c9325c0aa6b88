// tap's coverage map: which files each test file's process tree counts for coverage.
// test/walkthrough.test.ts runs the node from dist/ (as `npm start` does); that build's
// coverage, mapped back to src/ through its source maps, has other offsets than the sources
// the other tests compile, and merged with theirs it garbles the report. It counts nothing.
// The bench tests start nodes the way `cairn bench --spawn` does (through tsx, whose offsets
// differ too): they count only for the load generator's own files.
// Every other test counts what it loads ([] = tap's default).
import { readdirSync } from 'node:fs';

const BENCH = [...readdirSync('src/bench').map((f) => `src/bench/${f}`), 'src/cli/bench.ts', 'workers/bench-sign.ts'];

export default (testFile) => {
  if (/walkthrough\.test\.[mc]?[jt]s$/.test(testFile)) return null;
  if (/(^|\/)bench(-report)?\.test\.[mc]?[jt]s$/.test(testFile)) return BENCH;
  return [];
};
