/**
 * scripts/lint-src.mjs, the source rules `npm run lint` adds to biome: positional path
 * parameters, `any` types and ad-hoc `new ApiError(` fail it, with file:line; prose,
 * strings and regular expressions that mention them do not. Run as `npm run lint` runs it, on temp dirs.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DOLLAR_BRACE = '$' + '{';
const SCRIPT = join(import.meta.dirname, '..', 'scripts', 'lint-src.mjs');

function lint(files: Record<string, string>): { status: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-lint-src-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  const r = spawnSync(process.execPath, [SCRIPT, dir], { cwd: dir, encoding: 'utf8' });
  return { status: r.status, out: r.stderr + r.stdout };
}

t.test('a clean tree passes', async (t) => {
  const r = lint({
    'a.ts': [
      "import type { Request } from './route.js';",
      'export const id = (r: Request<object, URLSearchParams, Buffer, "/x/:id">): string => r.params.id;',
      '// The alarm: any failed write turns the node read-only; as any reader of params[0] knows.',
      "export const label = 'Data sign as any agent';",
      'export const re = /params\\[\\d\\]: any/;',
      '/* a block comment: as any, <any> */',
      // `#` stands for a template literal's `${` here (biome flags `${` in a plain string).
      'export const tpl = (x: string): string => `#x}: any #`params[0]`}`;'.replaceAll('#', DOLLAR_BRACE),
      'export const many = [1].map((n) => n).some((x): x is number => x > 0);',
    ].join('\n'),
    'sub/b.mjs': 'export function company(x) {\n  return x.anything ?? x.many;\n}\n',
  });
  t.equal(r.status, 0, r.out);
  t.equal(r.out, '');
});

t.test('positional path parameters and any types fail, each with its file and line', async (t) => {
  const r = lint({
    'ok.ts': 'export const a = 1;\n',
    'routes/bad.ts': [
      'export function h(req: { params: string[] }): string {',
      '  return req.params[0]!;',
      '}',
      'export const x: any = 1;',
      'export const y = 2 as any;',
      'export const z: Array<any> = [];',
      'export const w: Record<string, any> = {};',
      'export const v = `#(1 as any) + 1}`;'.replaceAll('#', DOLLAR_BRACE),
    ].join('\n'),
  });
  t.equal(r.status, 1);
  const lines = r.out.trim().split('\n');
  t.match(lines[0], /routes[/\\]bad\.ts:2: positional path parameter/);
  t.match(lines[1], /routes[/\\]bad\.ts:4: `any` type annotation/);
  t.match(lines[2], /routes[/\\]bad\.ts:5: `as any` cast/);
  t.match(lines[3], /routes[/\\]bad\.ts:6: `any` type argument/);
  t.match(lines[4], /routes[/\\]bad\.ts:7: `any` type argument/);
  t.match(lines[5], /routes[/\\]bad\.ts:8: `as any` cast/);
  t.equal(lines[6], 'lint-src: 6 findings');
  t.notMatch(r.out, /ok\.ts/);
});

t.test('an ad-hoc `new ApiError(` fails outside the catalog machinery; catalog construction and prose pass', async (t) => {
  const r = lint({
    'http/errors.ts': [
      "import { ApiError } from './api-error.js';",
      'export const make = (status: number, message: string): ApiError => new ApiError(status, message);',
    ].join('\n'),
    'node-api/users.ts': [
      "import { ApiError } from '../http/api-error.js';",
      "import { nodeErrors } from './errors.js';",
      '// an ad-hoc new ApiError( in a comment is prose',
      "export const a = (): ApiError => new ApiError(404, 'User not found');",
      'export const b = (): ApiError => nodeErrors.userNotFound({ id: "x" });',
      'export const c = \'new ApiError(400, "x")\';',
      'export const d = (): ApiError =>',
      '  new   ApiError (400, "spaced");',
    ].join('\n'),
    'other/http/errors.ts': "export const e = (): unknown => new ApiError(500, 'not the catalog machinery');",
  });
  t.equal(r.status, 1);
  const lines = r.out.trim().split('\n');
  t.match(lines[0], /node-api[/\\]users\.ts:4: ad-hoc `new ApiError\(`/);
  t.match(lines[1], /node-api[/\\]users\.ts:8: ad-hoc `new ApiError\(`/);
  t.match(lines[2], /other[/\\]http[/\\]errors\.ts:1: ad-hoc `new ApiError\(`/);
  t.equal(lines[3], 'lint-src: 3 findings');
  t.notMatch(r.out, /^http[/\\]errors\.ts/m);
});

t.test('the project source itself is clean', async (t) => {
  const r = spawnSync(process.execPath, [SCRIPT], { cwd: join(import.meta.dirname, '..'), encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
});

t.test('a handler or load step that reads the query or body itself fails; parsers and links pass', async (t) => {
  const parsers = [
    "import type { Req } from './server.js';",
    '/** Reads the body: a parser. */',
    'export function objectBody(req: Req): object {',
    "  return JSON.parse(req.body.toString('utf8')) as object;",
    '}',
    '/** Reads the query through another function: a reader too. */',
    'export function pageOf(req: Req): number {',
    '  return limitOf(req) * 2;',
    '}',
    'function limitOf(req: Req): number {',
    "  return Number(req.query.get('limit'));",
    '}',
    '/** Echoes the query into a link: allowed in a handler. */',
    'export function selfUrl(req: Req): string {',
    // `#` stands for a template literal's `${` (biome flags `${` in a plain string).
    '  return `#req.path}?#req.query.toString()}`;'.replaceAll('#', DOLLAR_BRACE),
    '}',
  ].join('\n');
  const routes = [
    "import { objectBody, pageOf, selfUrl } from './parsers.js';",
    'r.add({',
    "  path: '/good',",
    '  load: ({ params }) => find(params.id),',
    '  query: pageOf,',
    '  body: (req) => objectBody(req),',
    '  handler: ({ req, query, body }) => answer({ query, body, link: selfUrl(req) }),',
    '});',
    'r.add({',
    "  path: '/bad',",
    '  handler: ({ req }) => {',
    "    const q = req.query.get('q');",
    '    const b = objectBody(req);',
    '    const n = pageOf(req);',
    '    return answer({ q, b, n });',
    '  },',
    '});',
    'r.add({',
    "  path: '/worse',",
    '  load: (c) => find(c.req.body),',
    "  handler: ({ query }) => answer(JSON.parse(query.get('x') ?? '') as unknown),",
    '});',
    "r.add({ path: '/raw', handler: ({ req }) => answer(new URLSearchParams(req.rawQuery)) });",
    "// In prose, a handler: that reads req.query is no finding; nor is 'handler: req.body' in a string.",
  ].join('\n');
  const r = lint({ 'parsers.ts': parsers, 'routes.ts': routes });
  t.equal(r.status, 1, r.out);
  const lines = r.out.trim().split('\n');
  t.same(
    lines.map((l) => l.replace(/\\/g, '/').replace(/^.*?routes\.ts:/, '')),
    [
      '12: handler reads the raw query or body (declare a query: or body: parser)',
      "13: handler calls a query or body parser (declare it as the route's query: or body: parser)",
      "14: handler calls pageOf, which reads the raw query or body (make it the route's query: or body: parser)",
      '20: handler reads the raw query or body (declare a query: or body: parser)',
      '21: handler reads the raw query (declare a query: parser)',
      '21: handler parses JSON itself (declare a body: parser)',
      '23: handler reads the raw query (declare a query: parser)',
      'lint-src: 7 findings',
    ],
  );
  t.notMatch(r.out, /parsers\.ts/, 'the parsers themselves may read the request');
});
