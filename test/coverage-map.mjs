// tap's coverage map: which files each test file's process tree counts for coverage.
// test/walkthrough.test.ts runs the node from dist/ (as `npm start` does); that build's
// coverage, mapped back to src/ through its source maps, has other offsets than the sources
// the other tests compile, and merged with theirs it garbles the report. It counts nothing.
// Every other test counts what it loads ([] = tap's default).
export default (testFile) => (/walkthrough\.test\.[mc]?[jt]s$/.test(testFile) ? null : []);
