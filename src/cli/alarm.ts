/**
 * `cairn alarm list|clear`: the node's storage alarms (src/store/alarms.ts) through the node
 * API's /admin/alarms, authenticated with a Cylinder token signed by the node's admin key
 * (<data dir>/keys/admin.priv). `clear` clears them and makes the node retry its storage at
 * once; a fault that is still there raises its alarm again.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Signer } from '../crypto/secp256k1.js';
import { makeCylinderJwt } from '../auth/cylinder.js';
import { checkedUrl, fetchOrExplain, NODE_API, parseOrUsage, UsageError } from './args.js';

export const USAGE = `usage: cairn alarm list|clear [--url URL] [--data-dir DIR] [--kind KIND] [--json]
Shows (list) or clears (clear) the node's storage alarms. While an alarm is raised the node
is read-only: writes answer 503, reads are served; it retries by itself and clears storage
alarms once writes succeed again. A corrupt-record alarm stays until it is cleared here.
  --url URL        the node API (default CAIRN_NODE_URL, else http://<CAIRN_NODE_BIND>, else http://127.0.0.1:8085;
                   --node-url is the same option)
  --data-dir DIR   the node's data directory, for its admin key (default CAIRN_DATA_DIR or ./data)
  --kind KIND      clear only this kind (NOSPACE, IO, STALLED, CORRUPT, COMMITTER)
  --json           print the node's answer as JSON
Exit status: 0 no alarm raised (list) or cleared (clear), 1 an alarm is raised or the node cannot be reached, 2 usage.
`;

interface Alarm {
  kind: string;
  cause: string;
  since: string;
}

function nodeUrl(opt: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (opt) return checkedUrl(opt, '--url');
  if (env.CAIRN_NODE_URL) return checkedUrl(env.CAIRN_NODE_URL, 'CAIRN_NODE_URL');
  const m = /^(.+):(\d+)$/.exec(env.CAIRN_NODE_BIND || '127.0.0.1:8085');
  let host = m?.[1]?.replace(/^\[(.*)\]$/, '$1') ?? '127.0.0.1';
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${m?.[2] ?? '8085'}`;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['url', 'node-url', 'data-dir', 'kind'], ['json']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [verb, ...extra] = args.positional;
  if (verb !== 'list' && verb !== 'clear') throw new UsageError(verb === undefined ? 'missing list or clear' : `unknown subcommand ${verb}`);
  if (extra.length) throw new UsageError(`unexpected argument ${extra[0]}`);
  const dataDir = resolve(args.options.get('data-dir') ?? process.env.CAIRN_DATA_DIR ?? 'data');
  let token: string;
  try {
    token = `Cylinder:${makeCylinderJwt(new Signer(readFileSync(join(dataDir, 'keys', 'admin.priv'), 'utf8').trim()))}`;
  } catch (err) {
    throw new Error(
      `cannot read the admin key in ${join(dataDir, 'keys')} (${(err as NodeJS.ErrnoException).code ?? String(err)}): name the node's data directory with --data-dir`,
    );
  }
  const base = nodeUrl(args.options.get('url') ?? args.options.get('node-url'));
  const kind = args.options.get('kind');
  const url = `${base}/admin/alarms${verb === 'clear' && kind ? `?kind=${encodeURIComponent(kind)}` : ''}`;
  const res = await fetchOrExplain(url, { method: verb === 'list' ? 'GET' : 'DELETE', headers: { authorization: `Bearer ${token}` } }, NODE_API);
  const body = (await res.json().catch(() => null)) as { data?: Alarm[]; message?: string } | null;
  if (!res.ok || !Array.isArray(body?.data)) throw new Error(`the node answered ${res.status}: ${body?.message ?? 'no alarm list'}`);
  const alarms = body.data;
  if (args.flags.has('json')) process.stdout.write(`${JSON.stringify({ [verb === 'list' ? 'alarms' : 'cleared']: alarms })}\n`);
  else if (alarms.length === 0) process.stdout.write(verb === 'list' ? 'no alarm raised\n' : 'no alarm to clear\n');
  else for (const a of alarms) process.stdout.write(`${verb === 'list' ? '' : 'cleared '}${a.kind}\t${a.cause}\tsince ${a.since}\n`);
  return verb === 'list' && alarms.length > 0 ? 1 : 0;
}
