/**
 * The ledger `cairn bench` loads: a keep-alive HTTP client per URL, the check that a URL is a
 * Sawtooth REST API before any load, and `--spawn` (a Cairn node of this package on a temp
 * directory and ephemeral loopback ports).
 */
import http from 'node:http';
import https from 'node:https';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Reply {
  status: number;
  body: string;
  retryAfter: string | undefined;
}

export class Target {
  readonly url: string;
  readonly #base: URL;
  readonly #agent: http.Agent;
  readonly #mod: typeof http | typeof https;

  constructor(url: string, connections: number) {
    this.url = url;
    this.#base = new URL(url);
    this.#mod = this.#base.protocol === 'https:' ? https : http;
    // The connections of the load, plus a few for commit tracking.
    this.#agent = new this.#mod.Agent({ keepAlive: true, maxSockets: connections + 4, maxFreeSockets: connections + 4 });
  }

  request(method: string, path: string, body?: Uint8Array, contentType = 'application/octet-stream', timeoutMs = 120_000): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = {};
      if (body) {
        headers['content-type'] = contentType;
        headers['content-length'] = body.length;
      }
      const prefix = this.#base.pathname === '/' ? '' : this.#base.pathname;
      const req = this.#mod.request(
        { host: this.#base.hostname, port: this.#base.port, method, path: prefix + path, agent: this.#agent, headers, timeout: timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const ra = res.headers['retry-after'];
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), retryAfter: Array.isArray(ra) ? ra[0] : ra });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs / 1000} s`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** Why a request failed, in a few words (ECONNREFUSED, a timeout…). */
export function why(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string }; message?: string };
  return e.code ?? e.cause?.code ?? e.message ?? String(err);
}

/** Retry-After as ms (seconds or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(v: string | undefined, now = Date.now()): number | undefined {
  if (v === undefined) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

/** Checks that `url` answers GET /blocks?limit=1 as a Sawtooth REST API does; throws a one-line reason otherwise. */
export async function checkSawtooth(t: Target): Promise<void> {
  let r: Reply;
  try {
    r = await t.request('GET', '/blocks?limit=1', undefined, undefined, 15_000);
  } catch (err) {
    throw new Error(`cannot reach ${t.url} (${why(err)}): is the ledger's REST API there? (--url URL, or --spawn for a node of its own)`);
  }
  let body: { data?: unknown; head?: unknown } | undefined;
  try {
    body = JSON.parse(r.body) as typeof body;
  } catch {
    body = undefined;
  }
  if (r.status !== 200 || !body || !Array.isArray(body.data) || typeof body.head !== 'string')
    throw new Error(`${t.url} is not a Sawtooth REST API: GET /blocks?limit=1 answered HTTP ${r.status} without a block list`);
}

export interface Spawned {
  url: string;
  stop(): Promise<void>;
}

/** Starts a Cairn node of this package (from the sources through tsx, or from the build) on a temp data directory. */
export async function spawnNode(): Promise<Spawned> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-'));
  const fromSource = import.meta.url.endsWith('.ts');
  const root = fileURLToPath(new URL(fromSource ? '../..' : '../../..', import.meta.url));
  const args = fromSource ? ['--import', 'tsx', join(root, 'src/main.ts')] : [join(root, 'dist/src/main.js')];
  const child = spawn(process.execPath, args, {
    cwd: root,
    // The user's CAIRN_* settings reach the node, but not its addresses or data directory.
    env: {
      ...process.env,
      CAIRN_DATA_DIR: dir,
      CAIRN_LEDGER_BIND: '127.0.0.1:0',
      CAIRN_NODE_BIND: '127.0.0.1:0',
      CAIRN_DATA_BIND: '127.0.0.1:0',
      CAIRN_NETWORK_BIND: '127.0.0.1:0',
      CAIRN_COMPONENT_BIND: 'off',
      CAIRN_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stop = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    });
    rmSync(dir, { recursive: true, force: true });
  };
  let log = '';
  try {
    const port = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the spawned node did not start in 60 s')), 60_000);
      child.stderr?.on('data', (d: Buffer) => {
        log = (log + d.toString()).slice(-20_000);
        const m = /\(C\) on [^:\s]+:(\d+)/.exec(log);
        if (m) {
          clearTimeout(timer);
          resolve(m[1] as string);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the spawned node exited with ${code}: ${log.trim().split('\n').pop() ?? ''}`));
      });
    });
    return { url: `http://127.0.0.1:${port}`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
