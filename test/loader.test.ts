// The tests' TypeScript loader (test/loader/) must not make coverage read wrong. tap's report
// (c8, through v8-to-istanbul) maps V8's coverage of the compiled code back to the sources with
// the source map the loader writes. A loader whose output does not map back reads wrong: with
// no map, lines that never ran read covered; under tsx, functions map to other lines (a full
// run under it once reported every file at 100%). The coverage gate only catches figures that
// are too low, so this test runs a file through the loader under V8 coverage and converts the
// result as the report does: a function never called must come out uncovered, line by line,
// and the one called covered. (It fails with the map taken out of the loader, and under tsx.)
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import v8toIstanbul from 'v8-to-istanbul';
// @ts-expect-error: the loader is plain JavaScript, without types
import { cacheFile, compile } from './loader/hooks.mjs';
// @ts-expect-error: the loader is plain JavaScript, without types
import { ensureTestJs } from './loader/test-js.mjs';

const LOADER = pathToFileURL(resolve('test/loader/register.mjs')).href;
const CACHE = resolve('node_modules/.cache/cairn-swc');

// Line numbers matter below: `called` spans lines 4-7, `neverCalled` lines 9-16.
const FIXTURE = `interface Pair { a: number; b: number }
type Op = (p: Pair) => number;

export function called(p: Pair): number {
  const sum: number = p.a + p.b;
  return sum * 2;
}

export function neverCalled(p: Pair): number {
  let total: number = 0;
  for (let i = 0; i < p.a; i++) {
    total += i;
  }
  const op: Op = (q) => q.b - 1;
  return total + op(p);
}

process.stdout.write(String(called({ a: 1, b: 2 })));
`;

interface ScriptCoverage {
  url: string;
  functions: Array<{ functionName: string; isBlockCoverage: boolean; ranges: Array<{ startOffset: number; endOffset: number; count: number }> }>;
}
interface ProcessCoverage {
  result: ScriptCoverage[];
  'source-map-cache'?: Record<string, { lineLengths?: number[]; data?: unknown }>;
}

function run(file: string, coverageDir: string, loader = true): Promise<{ code: number | null; out: string }> {
  // Only what the loader needs. Under coverage tap hooks child_process and adds its own
  // coverage collector to NODE_OPTIONS (@tapjs/processinfo), which would take this child's
  // coverage for itself: the shell drops it after the hook.
  const env = { PATH: process.env.PATH ?? '', NODE_V8_COVERAGE: coverageDir };
  const argv = ['-c', 'unset NODE_OPTIONS; exec "$@"', 'sh', process.execPath, ...(loader ? [`--import=${LOADER}`] : []), file];
  const child = spawn('/bin/sh', argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((done) => child.once('exit', (code) => done({ code, out })));
}

/**
 * Runs `file` under V8 coverage (or `runFile`, its compiled copy, with no loader) and checks
 * that the report maps its functions back to their lines of `file`.
 */
async function mapsBack(t: Test, file: string, coverageDir: string, expected: string, runFile?: string): Promise<void> {
  const { code, out } = await run(runFile ?? file, coverageDir, runFile === undefined);
  t.equal(code, 0, `the fixture exits 0 ${out}`);
  t.equal(out, expected, 'the fixture ran, compiled by the loader');

  const url = pathToFileURL(runFile ?? file).href;
  const reports = readdirSync(coverageDir).map((f) => JSON.parse(readFileSync(join(coverageDir, f), 'utf8')) as ProcessCoverage);
  const report = reports.find((r) => r.result.some((s) => s.url === url));
  if (!report) throw new Error(`no coverage of ${url} in ${coverageDir}`);
  const script = report.result.find((s) => s.url === url);
  if (!script) throw new Error(`no coverage of ${url}`);
  // Converted as the report converts it (c8's _getSourceMap): through the compiled code's
  // source map and line lengths, from the source-map cache Node writes beside the coverage;
  // without them, against the file on disk.
  const cached = report['source-map-cache']?.[url];
  t.ok(cached?.data, 'the loader gave the compiled code a source map');
  const sources: Partial<{ source: string; originalSource: string; sourceMap: { sourcemap: never } }> = {};
  if (cached?.data) sources.sourceMap = { sourcemap: cached.data as never };
  if (cached?.lineLengths) sources.source = cached.lineLengths.map((n) => `${''.padEnd(n, '.')}\n`).join('');
  const converter = v8toIstanbul(runFile ?? file, 0, sources as Parameters<typeof v8toIstanbul>[2]);
  await converter.load();
  converter.applyCoverage(script.functions);
  const cov = converter.toIstanbul()[file];
  if (!cov) throw new Error(`the report has no entry for ${file}`);

  // Line → hits, as the report's line figures count them.
  const lines = new Map<number, number>();
  for (const [id, loc] of Object.entries(cov.statementMap)) {
    const line = loc.start.line;
    lines.set(line, Math.max(lines.get(line) ?? 0, cov.s[id] ?? 0));
  }
  for (const line of [5, 6]) t.ok((lines.get(line) ?? 0) > 0, `line ${line} (called) is covered`);
  for (const line of [10, 11, 12, 14, 15]) t.equal(lines.get(line), 0, `line ${line} (never called) is uncovered`);
  const fns = Object.entries(cov.fnMap).map(([id, f]) => ({ name: f.name, line: f.loc.start.line, hits: cov.f[id] ?? 0 }));
  const never = fns.find((f) => f.name === 'neverCalled');
  t.equal(never?.line, 9, 'the uncalled function maps back to its own line');
  t.equal(never?.hits, 0, 'the uncalled function is reported uncovered');
  t.ok((fns.find((f) => f.name === 'called')?.hits ?? 0) > 0, 'the called function is reported covered');
}

t.test('a function the loaded file never calls is reported uncovered, line by line', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-loader-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'fixture.ts');
  writeFileSync(file, FIXTURE);
  await t.test('compiled by swc', (t) => mapsBack(t, file, join(dir, 'coverage-1'), '6'));
  // The loader keeps what swc wrote (node_modules/.cache/cairn-swc): the second process reads it back.
  await t.test("read back from the loader's cache", (t) => mapsBack(t, file, join(dir, 'coverage-2'), '6'));
  // Same size, same lines, another result: what runs must be the new code.
  writeFileSync(file, FIXTURE.replace('sum * 2', 'sum * 3'));
  await t.test('changed: compiled again, not read back', (t) => mapsBack(t, file, join(dir, 'coverage-3'), '9'));
});

// The cache folder is shared: other test files run beside this one and their processes add
// entries to it meanwhile, so the test looks for this source's own entry, named as the loader
// names it, not for what changed in the folder.
t.test("the loader's cache: one file per compiled source, named by a hash of it", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-loader-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'fixture.ts');
  // A source no other run compiled (the time in a comment): not in the cache before.
  const source = `// ${process.hrtime.bigint()}\n${FIXTURE}`;
  writeFileSync(file, source);
  const entry = cacheFile(file, source);
  t.teardown(() => rmSync(entry, { force: true }));
  t.equal(dirname(entry), CACHE, 'kept in node_modules/.cache/cairn-swc');
  t.match(basename(entry), /^[0-9a-f]{64}\.js$/, 'named by the hash');
  t.notOk(existsSync(entry), 'not in the cache before the first run');
  const first = await run(file, join(dir, 'coverage-1'));
  t.equal(first.out, '6', 'the fixture ran');
  t.ok(existsSync(entry), 'the first run added it');
  const mine = readdirSync(CACHE).filter((f) => f.startsWith(basename(entry)));
  t.same(mine, [basename(entry)], 'one file, no temporary left beside it');
  const cached = readFileSync(entry, 'utf8');
  t.notMatch(cached, /interface Pair/, 'it holds the compiled code (types stripped)');
  t.match(cached, /sourceMappingURL=data:application\/json/, 'with its inline source map');
  // What the next process runs is the cached file, not a new compile: a marked copy shows it.
  writeFileSync(entry, "process.stdout.write('from the cache');\n");
  const second = await run(file, join(dir, 'coverage-2'));
  t.equal(second.out, 'from the cache', 'the second process ran the cached file');
  t.equal(readFileSync(entry, 'utf8'), "process.stdout.write('from the cache');\n", 'and did not write it again');
  // Another source at the same path has another name.
  t.not(cacheFile(file, `${source}\n`), entry, 'a changed source is kept under another name');
});

// The tests' compiled copy of the sources (test/loader/test-js.mjs): nodes, CLIs and threads
// run from it with no loader, and its coverage must read as the loader's does.
t.test("the compiled copy: the loader's code, kept up to date, mapped back to the sources", async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'cairn-testjs-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'src', 'deep'), { recursive: true });
  mkdirSync(join(root, 'workers'));
  const file = join(root, 'src', 'deep', 'fixture.ts');
  writeFileSync(file, FIXTURE);
  writeFileSync(join(root, 'workers', 'gone.ts'), 'export const gone: number = 1;\n');
  const out = ensureTestJs(root);
  t.equal(out, join(root, '.test-js'));
  const js = join(out, 'src', 'deep', 'fixture.js');
  t.equal(readFileSync(js, 'utf8'), compile(file), "the loader's code for it");
  t.ok(existsSync(join(out, 'workers', 'gone.js')), 'workers/ too');
  await t.test('run with no loader, it maps back to the source', (t) => mapsBack(t, file, join(root, 'coverage-1'), '6', js));

  // Nothing changed: nothing is written (a stamp of names, sizes and times says so).
  const before = statSync(js).mtimeMs;
  await new Promise((r) => setTimeout(r, 20));
  ensureTestJs(root);
  t.equal(statSync(js).mtimeMs, before, 'unchanged: not written again');
  // A changed source is compiled again; a removed one is removed from the copy.
  writeFileSync(file, FIXTURE.replace('sum * 2', 'sum * 3'));
  rmSync(join(root, 'workers', 'gone.ts'));
  ensureTestJs(root);
  t.equal(readFileSync(js, 'utf8'), compile(file), 'changed: compiled again');
  t.notOk(existsSync(join(out, 'workers', 'gone.js')), 'removed with its source');
  await t.test('and the new code is what runs', (t) => mapsBack(t, file, join(root, 'coverage-2'), '9', js));
});
