// The tests' TypeScript loader (test/loader/) must not make coverage read wrong. tap's report
// (c8, through v8-to-istanbul) maps V8's coverage of the compiled code back to the sources with
// the source map the loader writes. A loader whose output does not map back reads wrong: with
// no map, lines that never ran read covered; under tsx, functions map to other lines (a full
// run under it once reported every file at 100%). The coverage gate only catches figures that
// are too low, so this test runs a file through the loader under V8 coverage and converts the
// result as the report does: a function never called must come out uncovered, line by line,
// and the one called covered. (It fails with the map taken out of the loader, and under tsx.)
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import v8toIstanbul from 'v8-to-istanbul';

const LOADER = pathToFileURL(resolve('test/loader/register.mjs')).href;

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

function run(file: string, coverageDir: string): Promise<{ code: number | null; out: string }> {
  // Only what the loader needs. Under coverage tap hooks child_process and adds its own
  // coverage collector to NODE_OPTIONS (@tapjs/processinfo), which would take this child's
  // coverage for itself: the shell drops it after the hook.
  const env = { PATH: process.env.PATH ?? '', NODE_V8_COVERAGE: coverageDir };
  const argv = ['-c', 'unset NODE_OPTIONS; exec "$@"', 'sh', process.execPath, `--import=${LOADER}`, file];
  const child = spawn('/bin/sh', argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((done) => child.once('exit', (code) => done({ code, out })));
}

t.test('a function the loaded file never calls is reported uncovered, line by line', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-loader-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'fixture.ts');
  writeFileSync(file, FIXTURE);
  const coverageDir = join(dir, 'coverage');

  const { code, out } = await run(file, coverageDir);
  t.equal(code, 0, `the fixture exits 0 ${out}`);
  t.equal(out, '6', 'the fixture ran, compiled by the loader');

  const url = pathToFileURL(file).href;
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
  const converter = v8toIstanbul(file, 0, sources as Parameters<typeof v8toIstanbul>[2]);
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
});
