#!/usr/bin/env node
/**
 * The source rules biome cannot express, run by `npm run lint` after biome:
 *
 * - no positional path parameters (`params[`): handlers read named ones (`params.block_id`),
 *   typed from the route's path (src/http/route.ts);
 * - no `any` as a type (`: any`, `as any`, `<any`, `, any>`): the types come from the parsers.
 *
 * Comments, strings and regular expressions are blanked before matching, so prose that
 * says "any" is no finding. Usage: `node scripts/lint-src.mjs [dir ...]` (default: src);
 * prints `file:line: rule` per finding and exits 1 when there is one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const RULES = [
  { re: /params\s*\[/, what: 'positional path parameter (read the named one: params.<name>)' },
  { re: /:\s*any\b/, what: '`any` type annotation' },
  { re: /\bas\s+any\b/, what: '`as any` cast' },
  { re: /<\s*any\b/, what: '`any` type argument' },
  { re: /,\s*any\s*[>,]/, what: '`any` type argument' },
];

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

/** Findings in `text`: `{line, what}` per rule broken, in line order. */
export function findings(text) {
  const found = [];
  codeOnly(text)
    .split('\n')
    .forEach((line, k) => {
      for (const rule of RULES) if (rule.re.test(line)) found.push({ line: k + 1, what: rule.what });
    });
  return found;
}

function main(dirs) {
  let count = 0;
  for (const dir of dirs) {
    for (const file of sources(dir)) {
      for (const f of findings(readFileSync(file, 'utf8'))) {
        console.error(`${relative(process.cwd(), file)}:${f.line}: ${f.what}`);
        count++;
      }
    }
  }
  if (count > 0) {
    console.error(`lint-src: ${count} finding${count === 1 ? '' : 's'}`);
    process.exit(1);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href)
  main(process.argv.length > 2 ? process.argv.slice(2) : ['src']);
