/**
 * GET /explorer: the ledger explorer page, static files served on the ledger gateway's port.
 *
 * The files (HTML, CSS, plain ES-module JS, no build step) live in the top-level `explorer/`
 * folder of the package. They are read once, at start, into memory: a request names a file
 * of that list or nothing, so no request path ever reaches the file system and no path
 * (`..`, encoded or not, NUL, a subfolder, a dotfile) can name a file outside the folder.
 * Only top-level files with a known extension are served; anything else is 404 in the ledger
 * gateway's error shape.
 *
 * Every file carries a Content Security Policy that allows only the node itself (scripts,
 * styles, images, fetch and the /subscriptions websocket), and `no-cache`: the browser asks
 * again each time, so a node that was upgraded never runs an old script against a new page.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HttpServer, Reply } from '../http/server.js';
import { log } from '../log.js';
import { gatewayErrors } from '../ledger-api/errors.js';

export const EXPLORER_PATH = '/explorer';

/** The policy of every explorer file: the node's own origin, nothing else; no framing. */
export const EXPLORER_CSP = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'";

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

/** A servable name: one path segment, no leading dot, a known extension. */
const NAME_RE = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*(\.[a-z]+)$/;

export interface StaticFile {
  body: Buffer;
  contentType: string;
}

/**
 * The folder of the explorer's files: `explorer/` at the package root, which is two levels
 * above this module when it runs from the sources (src/explorer/) and three when it runs
 * from the build (dist/src/explorer/).
 */
export function explorerDir(moduleUrl: string = import.meta.url): string | undefined {
  for (const up of ['../../explorer', '../../../explorer']) {
    const dir = fileURLToPath(new URL(up, moduleUrl));
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return undefined;
}

/** The servable files of `dir` by name (top level only); an empty map when the folder is missing. */
export function loadExplorerFiles(dir: string | undefined): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (dir === undefined || !existsSync(dir)) return files;
  for (const name of readdirSync(dir).sort()) {
    const ext = NAME_RE.exec(name)?.[2];
    const contentType = ext === undefined ? undefined : CONTENT_TYPES[ext];
    if (contentType === undefined) continue;
    const path = join(dir, name);
    if (!statSync(path).isFile()) continue;
    files.set(name, { body: readFileSync(path), contentType });
  }
  return files;
}

const HEADERS = {
  'content-security-policy': EXPLORER_CSP,
  'cache-control': 'no-cache',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/**
 * The file a request path names, or an ApiError: 400 for a path that cannot be a file name
 * at all (bad percent-encoding, NUL, a separator or dot segment after decoding), 404 for a
 * name the folder does not hold.
 */
export function lookup(files: Map<string, StaticFile>, rawPath: string): StaticFile {
  const rest = rawPath.slice(EXPLORER_PATH.length + 1);
  let name: string;
  try {
    name = rest === '' ? 'index.html' : decodeURIComponent(rest);
  } catch {
    throw gatewayErrors.explorerBadEncoding();
  }
  if (/[\0/\\]/.test(name) || name === '.' || name === '..') throw gatewayErrors.explorerNoFileName();
  // Own properties of a Map only: `__proto__` or `constructor` are just unknown names.
  const file = files.get(name);
  if (!file) throw gatewayErrors.explorerFileNotFound({ name: JSON.stringify(name.slice(0, 100)) });
  return file;
}

/** Registers GET /explorer (a redirect to the folder) and GET /explorer/* on the ledger gateway's server. */
export function registerExplorer(server: HttpServer, dir = explorerDir()): void {
  const files = loadExplorerFiles(dir);
  if (!files.has('index.html'))
    log.warn(`explorer: no page found (looked for explorer/index.html at ${dir ?? 'the package root'}); /explorer answers 404`);
  // Relative, so the page also works behind a proxy that mounts the node under a prefix.
  server.route('get', EXPLORER_PATH, () => ({ status: 302, body: '', contentType: 'text/plain', headers: { location: 'explorer/', ...HEADERS } }));
  server.route('get', `${EXPLORER_PATH}/*`, (req): Reply => {
    const file = lookup(files, req.path);
    return { status: 200, body: file.body, contentType: file.contentType, headers: HEADERS };
  });
}
