/**
 * `cairn alarm list|clear`: the node's storage alarms (src/store/alarms.ts) through the node
 * API's /admin/alarms, authenticated with a Cylinder token signed by the node's admin key
 * (<data dir>/keys/admin.priv). `clear` clears them and makes the node retry its storage at
 * once; a fault that is still there raises its alarm again.
 */
import { join, resolve } from 'node:path';
import { makeCylinderJwt } from '../auth/cylinder.js';
import type { AlarmKind } from '../store/alarms.js';
import {
  answerMessage,
  call,
  CliError,
  isMain,
  jsonRequested,
  NODE_API,
  nodeUrl,
  Output,
  parseOrUsage,
  readKeyFile,
  runCommand,
  timeoutOption,
  UsageError,
} from './args.js';

/** Every alarm kind the node raises (src/store/alarms.ts), as `--kind` takes them: a record, so a new kind fails to compile until it is here. */
const KINDS: Record<AlarmKind, true> = { NOSPACE: true, IO: true, STALLED: true, CORRUPT: true, COMMITTER: true, DIVERGED: true };
export const ALARM_KINDS = Object.keys(KINDS) as AlarmKind[];

export const USAGE = `usage: cairn alarm list|clear [--url URL] [--data-dir DIR] [--kind KIND] [--json] [--quiet]
Shows (list) or clears (clear) the node's storage alarms. While an alarm is raised the node
is read-only: writes answer 503, reads are served; it retries by itself and clears storage
alarms once writes succeed again. A corrupt-record alarm stays until it is cleared here.
  --url URL          the node API (default CAIRN_NODE_URL, else http://<CAIRN_NODE_BIND>, else http://127.0.0.1:8085;
                     --node-url is the same option)
  --data-dir DIR     the node's data directory, for its admin key (default CAIRN_DATA_DIR or ./data)
  --kind KIND        clear only this kind (repeatable): ${ALARM_KINDS.join(', ')}
  --timeout SECONDS  how long the call to the node API may take (default 30)
  --json             print the node's answer as JSON
exit status: 0 no alarm raised (list) or cleared (clear), 1 an alarm is raised or the node cannot be reached,
             2 usage or input error (an unknown kind, no admin key in --data-dir)
`;

interface Alarm {
  kind: string;
  cause: string;
  since: string;
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, ['url', 'node-url', 'data-dir', 'kind', 'timeout']);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const out = new Output(args);
  const [verb, ...extra] = args.positional;
  if (verb !== 'list' && verb !== 'clear')
    throw new UsageError(verb === undefined ? 'missing subcommand: list or clear' : `unknown subcommand ${verb} (list, clear)`);
  if (extra.length) throw new UsageError(`unexpected argument ${extra[0]}`);
  const kinds = args.lists.get('kind') ?? [];
  if (verb === 'list' && kinds.length > 0) throw new UsageError('--kind is an option of alarm clear');
  const bad = kinds.find((k) => !(ALARM_KINDS as readonly string[]).includes(k));
  if (bad !== undefined) throw new UsageError(`--kind takes one of ${ALARM_KINDS.join(', ')}, got "${bad}"`);
  const base = nodeUrl(args.options.get('url') ?? args.options.get('node-url'));
  const timeoutMs = timeoutOption(args);
  const dataDir = resolve(args.options.get('data-dir') ?? (process.env.CAIRN_DATA_DIR || 'data'));
  const signer = readKeyFile(join(dataDir, 'keys', 'admin.priv'), "--data-dir (the node's admin key)");
  const token = `Cylinder:${makeCylinderJwt(signer)}`;
  const query = kinds.map((k) => `kind=${encodeURIComponent(k)}`).join('&');
  const url = `${base}/admin/alarms${verb === 'clear' && query ? `?${query}` : ''}`;
  const a = await call(url, { method: verb === 'list' ? 'GET' : 'DELETE', headers: { authorization: `Bearer ${token}` } }, NODE_API, timeoutMs);
  const data = (a.json as { data?: Alarm[] } | undefined)?.data;
  if (!a.ok || !Array.isArray(data)) throw new CliError(`the node API answered ${a.status}: ${answerMessage(a)}`);
  out.result(
    { [verb === 'list' ? 'alarms' : 'cleared']: data },
    data.length === 0
      ? verb === 'list'
        ? 'no alarm raised'
        : 'no alarm to clear'
      : data.map((x) => `${verb === 'list' ? '' : 'cleared '}${x.kind}\t${x.cause}\tsince ${x.since}`).join('\n'),
  );
  return verb === 'list' && data.length > 0 ? 1 : 0;
}

if (isMain(import.meta.url)) void runCommand('cairn alarm', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
