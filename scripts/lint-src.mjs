#!/usr/bin/env node
/**
 * The source rules biome cannot express, run by `npm run lint` after biome:
 *
 * - no positional path parameters (`params[`): handlers read named ones (`params.block_id`),
 *   typed from the route's path (src/http/route.ts);
 * - no `any` as a type (`: any`, `as any`, `<any`, `, any>`): the types come from the parsers;
 * - no route handler (or load step) that reads the request's query or body itself: the
 *   raw `req.query`/`req.body` (also as `c.req.query`, and the default `query.get(...)`),
 *   `URLSearchParams`, `JSON.parse`, or a call of one of the query and body parsers
 *   (`objectBody(...)`, `parsePage(...)`...). It declares `query:`/`body:` parsers instead
 *   (src/http/route.ts), which run after its `load` step, so refusals keep their order. A
 *   handler is the value of a `handler:` or `load:` property, up to the end of its route.
 *   A handler that hands the request to a function of the linted tree that reads the raw
 *   query or body (directly or through another such function) fails too, unless the
 *   function only echoes the query into links (LINK_BUILDERS);
 * - no ad-hoc `new ApiError(` outside the catalog machinery (src/http/errors.ts): an
 *   interface's errors are defined once, in its catalog, and constructed by name
 *   (`nodeErrors.roleNotFound()`), so each one's status and message live in one place and
 *   the docs' error tables can be checked against them (test/error-catalog.test.ts).
 *
 * Comments, strings and regular expressions are blanked before matching, so prose that
 * says "any" is no finding. Usage: `node scripts/lint-src.mjs [dir ...]` (default: src);
 * prints `file:line: rule` per finding and exits 1 when there is one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

const RULES = [
  { re: /params\s*\[/, what: 'positional path parameter (read the named one: params.<name>)' },
  { re: /:\s*any\b/, what: '`any` type annotation' },
  { re: /\bas\s+any\b/, what: '`as any` cast' },
  { re: /<\s*any\b/, what: '`any` type argument' },
  { re: /,\s*any\s*[>,]/, what: '`any` type argument' },
];

/** What a handler or load step must not do: read the query or body without the route's parsers. */
const HANDLER_RULES = [
  { re: /\breq\s*\.\s*(?:query|body)\b/g, what: 'handler reads the raw query or body (declare a query: or body: parser)' },
  {
    re: /(?<![\w$.])query\s*\.\s*(?:get|getAll|has|entries|keys|values|forEach)\s*\(/g,
    what: 'handler reads the raw query (declare a query: parser)',
  },
  { re: /\bURLSearchParams\b/g, what: 'handler reads the raw query (declare a query: parser)' },
  { re: /\bJSON\s*\.\s*parse\b/g, what: 'handler parses JSON itself (declare a body: parser)' },
  {
    re: /\b(?:parseJson|parseJsonBody|objectBody|dataItems|credentialsBody|nodeFromBody|batchListBody|idArrayBody|parsePage|parsePageQuery|parsePaging|parseReverse|listQuery|filterIds|idQuery|idsAndWait|waitQuery|statusesQuery)\s*\(/g,
    what: "handler calls a query or body parser (declare it as the route's query: or body: parser)",
  },
];

/**
 * The modules (paths under the linted folder) that may construct ApiError: the catalog
 * machinery every catalog goes through.
 */
const API_ERROR_MAKERS = new Set(['http/errors.ts']);

const AD_HOC_ERROR = {
  re: /\bnew\s+ApiError\s*\(/,
  what: "ad-hoc `new ApiError(` (define the error in its interface's catalog and construct it by name)",
};

/** Functions that read the request's query only to echo it into the reply's links. */
const LINK_BUILDERS = new Set(['selfUrl', 'buildUrl', 'pagingOf', 'listBody', 'pagingEnvelope', 'baseUrl', 'callbackUri']);

const RAW_READ = /\breq\s*\.\s*(?:query|body)\b/;

/** Top-level function declarations of `code`: name and body (to the first line that is a lone `}`). */
function functionsOf(code) {
  const out = [];
  for (const m of code.matchAll(/^(?:export\s+)?(?:async\s+)?function\s*\*?\s*([\w$]+)/gm)) {
    const end = code.indexOf('\n}', m.index);
    out.push({ name: m[1], body: code.slice(m.index + m[0].length, end === -1 ? code.length : end) });
  }
  return out;
}

/**
 * The names of the functions (of all the `texts`) that read a request's raw query or
 * body, directly or by calling another such function; link builders left out.
 */
export function readerNames(texts) {
  const fns = texts.flatMap((t) => functionsOf(codeOnly(t))).filter((f) => !LINK_BUILDERS.has(f.name));
  const readers = new Set(fns.filter((f) => RAW_READ.test(f.body)).map((f) => f.name));
  for (let grew = true; grew; ) {
    grew = false;
    for (const f of fns) {
      if (readers.has(f.name)) continue;
      if ([...readers].some((r) => new RegExp(`(?<![\\w$.])${r.replace(/\$/g, '\\$')}\\s*\\(`).test(f.body))) {
        readers.add(f.name);
        grew = true;
      }
    }
  }
  return readers;
}

/**
 * The spans of `code` (comments and strings blanked) that are route handlers or load
 * steps: from after `handler:` / `load:` to the `,` or closing bracket that ends the
 * property's value.
 */
export function handlerSpans(code) {
  const spans = [];
  for (const m of code.matchAll(/\b(?:handler|load)\s*:/g)) {
    const from = m.index + m[0].length;
    let depth = 0;
    let i = from;
    for (; i < code.length; i++) {
      const c = code[i];
      if (c === '(' || c === '[' || c === '{') depth++;
      else if (c === ')' || c === ']' || c === '}') {
        if (depth === 0) break;
        depth--;
      } else if (c === ',' && depth === 0) break;
    }
    spans.push([from, i]);
  }
  return spans;
}

const SOURCE = /\.(?:ts|mts|cts|tsx|js|mjs|cjs)$/;

/** Files under `dir` (recursively) that are sources. */
function sources(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.isFile() && SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out.sort();
}

const REGEX_AFTER = new Set([...'(,=:[!&|?{};+-*%<>~^'].concat(['']));

/**
 * The code of `text` with comments, string and template literal text and regular
 * expressions replaced by blanks (line breaks kept, so line numbers stay right).
 */
export function codeOnly(text) {
  const out = [...text];
  const blank = (from, to) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  /** Braces open in the code of each template literal `${...}` being read. */
  const templates = [];
  let lastCode = '';
  let lastWord = '';
  let i = 0;
  const n = text.length;
  const readTemplate = () => {
    // At the character after a backtick or a closing `}` of `${`: read to `${` or the closing backtick.
    const start = i;
    while (i < n) {
      const c = text[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        blank(start, i);
        i++;
        lastCode = '`';
        return;
      } else if (c === '$' && text[i + 1] === '{') {
        blank(start, i);
        i += 2;
        templates.push(0);
        lastCode = '{';
        return;
      } else i++;
    }
    blank(start, n);
  };
  while (i < n) {
    const c = text[i];
    const d = text[i + 1];
    if (c === '/' && d === '/') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? n : end;
      blank(i, stop);
      i = stop;
    } else if (c === '/' && d === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? n : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
      lastCode = c;
    } else if (c === '`') {
      i++;
      readTemplate();
    } else if (c === '/' && (REGEX_AFTER.has(lastCode) || lastWord === 'return' || lastWord === 'typeof')) {
      let j = i + 1;
      let inClass = false;
      while (j < n && text[j] !== '\n') {
        const r = text[j];
        if (r === '\\') j += 2;
        else {
          if (r === '[') inClass = true;
          else if (r === ']') inClass = false;
          else if (r === '/' && !inClass) break;
          j++;
        }
      }
      blank(i + 1, j);
      i = j + 1;
      lastCode = '/';
    } else {
      if (templates.length > 0 && c === '{') templates[templates.length - 1]++;
      if (templates.length > 0 && c === '}') {
        if (templates[templates.length - 1] === 0) {
          templates.pop();
          i++;
          readTemplate();
          continue;
        }
        templates[templates.length - 1]--;
      }
      if (!/\s/.test(c)) {
        if (/[\w$]/.test(c)) {
          let j = i;
          while (j < n && /[\w$]/.test(text[j])) j++;
          lastWord = text.slice(i, j);
          lastCode = 'w';
          i = j;
          continue;
        }
        lastCode = c;
        lastWord = '';
      }
      i++;
    }
  }
  return out.join('');
}

/**
 * Findings in `text`: `{line, what}` per rule broken, in line order. `readers`: names of
 * functions that read the raw query or body (readerNames), which handlers must not call.
 * `path`: the file's path under the linted folder, with `/` (API_ERROR_MAKERS).
 */
export function findings(text, readers = new Set(), path = '') {
  const found = [];
  const code = codeOnly(text);
  const rules = API_ERROR_MAKERS.has(path) ? RULES : [...RULES, AD_HOC_ERROR];
  code.split('\n').forEach((line, k) => {
    for (const rule of rules) if (rule.re.test(line)) found.push({ line: k + 1, what: rule.what });
  });
  const lineOf = (at) => code.slice(0, at).split('\n').length;
  const seen = new Set();
  for (const [from, to] of handlerSpans(code)) {
    const span = code.slice(from, to);
    for (const rule of HANDLER_RULES) {
      for (const m of span.matchAll(rule.re)) {
        const line = lineOf(from + m.index);
        const key = `${line}:${rule.what}`;
        if (seen.has(key)) continue;
        seen.add(key);
        found.push({ line, what: rule.what });
      }
    }
    for (const m of span.matchAll(/(?<![\w$.])([\w$]+)\s*\(/g)) {
      const name = m[1];
      if (!readers.has(name) || HANDLER_RULES[4].re.source.includes(`|${name}|`)) continue;
      const line = lineOf(from + m.index);
      const key = `${line}:${name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      found.push({ line, what: `handler calls ${name}, which reads the raw query or body (make it the route's query: or body: parser)` });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

function main(dirs) {
  let count = 0;
  const files = dirs.flatMap((dir) =>
    sources(dir).map((file) => ({ file, path: relative(dir, file).split(sep).join('/'), text: readFileSync(file, 'utf8') })),
  );
  const readers = readerNames(files.map((f) => f.text));
  for (const { file, path, text } of files) {
    for (const f of findings(text, readers, path)) {
      console.error(`${relative(process.cwd(), file)}:${f.line}: ${f.what}`);
      count++;
    }
  }
  if (count > 0) {
    console.error(`lint-src: ${count} finding${count === 1 ? '' : 's'}`);
    process.exit(1);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href)
  main(process.argv.length > 2 ? process.argv.slice(2) : ['src']);
