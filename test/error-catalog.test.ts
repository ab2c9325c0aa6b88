/**
 * The error catalogs (src/http/errors.ts and one per interface) against docs/errors.md: the
 * tables there are rendered from the catalogs, and a catalog changed without its table (or
 * a table edited by hand) fails here. `CAIRN_WRITE_ERROR_DOCS=1` rewrites the tables from
 * the catalogs instead. Also: every error the ledger gateway answers without a numbered
 * code carries the title its reply writes; every template's placeholders are filled; the
 * constructors keep the status, code, message and headers of their definition.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUTH_ERRORS } from '../src/auth/errors.js';
import { CIRCUIT_ERRORS } from '../src/circuits/errors.js';
import { DATA_ERRORS } from '../src/data-api/errors.js';
import { catalog, fill, HTTP_ERRORS, httpRefusals, type ErrorDef } from '../src/http/errors.js';
import { RECORD_ERRORS } from '../src/http/record-errors.js';
import { GATEWAY_ERRORS, LEDGER_ERRORS, ledgerErrorReplyFactory } from '../src/ledger-api/errors.js';
import { NODE_ERRORS } from '../src/node-api/errors.js';
import { SCABBARD_ERRORS } from '../src/scabbard/errors.js';

const DOC = join(import.meta.dirname, '..', 'docs', 'errors.md');

/** Each catalog, in the order of docs/errors.md, with the name of its table. */
const CATALOGS: Array<[string, Record<string, ErrorDef>]> = [
  ['ledger', LEDGER_ERRORS],
  ['gateway', GATEWAY_ERRORS],
  ['http', HTTP_ERRORS],
  ['node', NODE_ERRORS],
  ['auth', AUTH_ERRORS],
  ['record', RECORD_ERRORS],
  ['circuit', CIRCUIT_ERRORS],
  ['scabbard', SCABBARD_ERRORS],
  ['data', DATA_ERRORS],
];

const cell = (s: string): string => s.replaceAll('\\', '\\\\').replaceAll('|', '\\|');

/** The Markdown table of one catalog. */
function table(name: string, defs: Record<string, ErrorDef>): string {
  const numbered = name === 'ledger';
  const rows = [
    `| ${numbered ? 'code' : 'name'} | HTTP | title | message | mirrors |`,
    '|---|---|---|---|---|',
    ...Object.entries(defs).map(
      ([key, d]) =>
        `| ${numbered ? key : `\`${key}\``} | ${d.status} | ${cell(d.title)} | ${cell(d.message)} | ${d.upstream === null ? '—' : cell(d.upstream)} |`,
    ),
  ];
  return rows.join('\n');
}

const begin = (name: string): string => `<!-- errors:${name} (rendered from the catalog; see the top of this page) -->`;
const END = '<!-- errors:end -->';

/** docs/errors.md with every table replaced by its catalog's rendering. */
function rendered(doc: string): string {
  let out = doc;
  for (const [name, defs] of CATALOGS) {
    const from = out.indexOf(begin(name));
    if (from === -1) continue;
    const to = out.indexOf(END, from);
    out = `${out.slice(0, from)}${begin(name)}\n${table(name, defs)}\n${out.slice(to)}`;
  }
  return out;
}

t.test('docs/errors.md has one table per catalog, and each is the catalog as it is', async (t) => {
  const doc = readFileSync(DOC, 'utf8');
  for (const [name] of CATALOGS) t.ok(doc.includes(begin(name)), `a table for the ${name} catalog`);
  const want = rendered(doc);
  if (process.env.CAIRN_WRITE_ERROR_DOCS === '1' && want !== doc) writeFileSync(DOC, want);
  else t.equal(doc, want, 'docs/errors.md matches the catalogs (CAIRN_WRITE_ERROR_DOCS=1 rewrites its tables)');
});

t.test('every catalog entry is well formed', async (t) => {
  for (const [name, defs] of CATALOGS) {
    for (const [key, d] of Object.entries(defs)) {
      t.ok(d.status >= 400 && d.status < 600, `${name}.${key}: an error status`);
      t.ok(d.title.length > 0 && d.message.length > 0, `${name}.${key}: a title and a message`);
      t.notMatch(d.message.replace(/\{\w+\}/g, ''), /[{}]/, `${name}.${key}: no brace but the placeholders`);
      if (name === 'ledger') t.equal(d.code, Number(key), `${name}.${key}: its code is its key`);
      else t.equal(d.code === undefined || d.code === 18, true, `${name}.${key}: no numbered code of its own`);
    }
  }
});

t.test("the gateway's own errors and the server's carry the title the gateway writes", async (t) => {
  const reply = ledgerErrorReplyFactory();
  for (const [name, defs] of [
    ['gateway', GATEWAY_ERRORS],
    ['http', HTTP_ERRORS],
  ] as const) {
    for (const [key, d] of Object.entries(defs)) {
      if (d.code !== undefined) continue;
      const body = JSON.parse(String(reply(d.status, 'm').body)) as { error: { code: number; title: string } };
      t.equal(body.error.title, d.title, `${name}.${key}: title`);
      t.equal(body.error.code, d.status, `${name}.${key}: the status as the code`);
    }
  }
});

t.test('constructors fill the template and keep status, code and headers', async (t) => {
  const http = catalog(HTTP_ERRORS);
  const e = http.methodNotAllowed({ method: 'PUT', url: '/x/{url}' });
  t.equal(e.status, 405);
  t.equal(e.message, 'Method PUT is not allowed on /x/{url}', "a value's own braces are not filled again");
  t.equal(e.code, undefined);
  const r = http.readOnly({ reason: 'disk full' }, { 'retry-after': '7' });
  t.same([r.status, r.message, r.code, r.headers], [503, 'disk full', 18, { 'retry-after': '7' }]);
  const c = catalog({ a: { status: 418, title: 'T', message: '{x} and {x} and {y}', upstream: null } });
  t.equal(c.a({ x: 1, y: '$&' }).message, '1 and 1 and $&', 'every placeholder, and no replacement patterns');
  t.equal(fill('{a}{b}!', { a: 'x' }), 'x{b}!', 'a name without a value stays as written');
  t.equal(fill('no placeholder'), 'no placeholder');
});

t.test("the server's refusals are plain values with the same status, message and code", async (t) => {
  t.same(httpRefusals.noResource({ url: '/nope' }), { status: 404, message: 'No resource at /nope' });
  t.same(httpRefusals.storageFault({ reason: 'r' }), { status: 503, message: 'r', code: 18 });
  t.notOk(httpRefusals.internal() instanceof Error, 'no Error (and no stack trace) per refusal');
});
