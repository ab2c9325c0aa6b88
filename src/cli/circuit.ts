/**
 * `cairn circuit <command> [options]`: builds, signs and submits circuit management
 * payloads, as upstream's `circuit propose` / `circuit vote` do, and lists circuits and
 * proposals. Prints the node's HTTP status and answer (--json: {"status", "body"}); exits 1
 * unless it is 2xx.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Signer } from '../crypto/secp256k1.js';
import { makeCylinderJwt } from '../auth/cylinder.js';
import { createPayload, idPayload, votePayload, type CircuitSpec, type IdAction, type ServiceSpec } from '../circuits/payloads.js';
import { sabreSetup } from './sabre-setup.js';
import { checkedUrl, fetchOrExplain, isMain, NODE_API, parseOrUsage, print, runCommand, UsageError } from './args.js';

export const USAGE = `usage: cairn circuit <command> [options]
Proposes, votes on, lists and ends circuits between nodes through the node API (docs/circuits.md).
commands:
  propose   --node-id ID --member ID=ENDPOINT[=PEERING_KEY] ... --service SVC::NODE[::TYPE] ...
            [--service-arg SVC::KEY=VALUE ...] [--peer-services] [--circuit-id ID]
            [--management-type TYPE] [--auth-type trust|challenge] [--display-name NAME] [--comments TEXT]
  vote      --node-id ID --circuit-id ID (--accept | --reject)   (submit it to the voter's own node)
  disband | abandon | purge | remove-proposal   --node-id ID --circuit-id ID
  list      [circuits | proposals] [--status disbanded|abandoned]
  show      circuit|proposal ID
  sabre-setup --circuit-id ID --service SVC   (as a circuit admin: contract registries, namespace registries
            and read/write permissions of the carried contracts on that state service; skips what exists)
common options:
  --url URL       node API (default CAIRN_NODE_URL, else http://<CAIRN_NODE_BIND>, else http://127.0.0.1:8085)
  --key FILE      private key file that signs the payload and the request (default ./data/keys/admin.priv,
                  or <CAIRN_DATA_DIR>/keys/admin.priv); its public key must be in the registry entry of --node-id
  --json          print each answer as {"status": N, "body": …}
exit status: 0 the node accepted (2xx), 1 refused or unreachable, 2 usage
`;

const VALUED = [
  'url',
  'key',
  'node-id',
  'member',
  'service',
  'service-arg',
  'circuit-id',
  'management-type',
  'auth-type',
  'display-name',
  'comments',
  'status',
];
const FLAGS = ['accept', 'reject', 'peer-services'];
const COMMANDS = ['propose', 'vote', 'disband', 'abandon', 'purge', 'remove-proposal', 'list', 'show', 'sabre-setup'];

function nodeUrl(opt: string | undefined): string {
  if (opt) return checkedUrl(opt, '--url');
  if (process.env.CAIRN_NODE_URL) return checkedUrl(process.env.CAIRN_NODE_URL, 'CAIRN_NODE_URL');
  const bind = (process.env.CAIRN_NODE_BIND || '127.0.0.1:8085').replace(/^0\.0\.0\.0:/, '127.0.0.1:');
  return checkedUrl(`http://${bind}`, 'CAIRN_NODE_BIND');
}

export async function run(argv: string[]): Promise<number> {
  const { positional, lists: opts, flags, help } = parseOrUsage(argv, VALUED, FLAGS);
  const one = (k: string): string | undefined => opts.get(k)?.at(-1);
  const need = (k: string): string => {
    const v = one(k);
    if (v === undefined) throw new UsageError(`--${k} is required`);
    return v;
  };
  const cmd = positional[0];
  if (help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!cmd) throw new UsageError(`missing command (${COMMANDS.join(', ')})`);
  if (!COMMANDS.includes(cmd)) throw new UsageError(`unknown command circuit ${cmd}`);
  const json = flags.has('json');
  const authType = one('auth-type');
  if (authType !== undefined && authType !== 'trust' && authType !== 'challenge')
    throw new UsageError(`--auth-type takes trust or challenge, got "${authType}"`);
  const url = nodeUrl(one('url'));
  const keyFile = one('key') ?? `${process.env.CAIRN_DATA_DIR || './data'}/keys/admin.priv`;
  let signer: Signer;
  try {
    signer = new Signer(readFileSync(keyFile, 'utf8').trim());
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`cannot use the key file ${keyFile} (--key FILE): ${code ?? 'not a valid secp256k1 private key'}`);
  }
  const auth = `Bearer Cylinder:${makeCylinderJwt(signer)}`;

  const call = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetchOrExplain(`${url}${path}`, { ...init, headers: { authorization: auth, ...(init.headers as Record<string, string>) } }, NODE_API);
  const show = async (res: Response): Promise<number> => {
    const text = await res.text();
    let body: unknown = text || null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: kept as text
    }
    print(json, { status: res.status, body }, `${res.status}${text ? ` ${text}` : ''}`);
    return res.ok ? 0 : 1;
  };
  const post = async (payload: Uint8Array): Promise<number> =>
    show(await call('/admin/submit', { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from(payload) }));

  switch (cmd) {
    case 'propose': {
      const members = (opts.get('member') ?? []).map((m) => {
        const [nodeId, endpoint, publicKey] = m.split('=');
        if (!nodeId || !endpoint) throw new UsageError(`--member takes ID=ENDPOINT[=PEERING_KEY], got ${m}`);
        return { node_id: nodeId, endpoints: [endpoint], public_key: publicKey };
      });
      const roster: ServiceSpec[] = (opts.get('service') ?? []).map((s) => {
        const [serviceId, nodeId, serviceType = 'scabbard'] = s.split('::');
        if (!serviceId || !nodeId) throw new UsageError(`--service takes SVC::NODE[::TYPE], got ${s}`);
        return { service_id: serviceId, node_id: nodeId, service_type: serviceType, arguments: [] };
      });
      if (flags.has('peer-services')) {
        for (const s of roster) s.arguments.push(['peer_services', JSON.stringify(roster.filter((x) => x !== s).map((x) => x.service_id))]);
      }
      for (const a of opts.get('service-arg') ?? []) {
        const m = /^([^:]+)::([^=]+)=(.*)$/.exec(a);
        if (!m) throw new UsageError(`--service-arg takes SVC::KEY=VALUE (SVC may be *), got ${a}`);
        for (const s of roster) if (m[1] === '*' || m[1] === s.service_id) s.arguments.push([m[2]!, m[3]!]);
      }
      const b62 = (): string => Array.from(randomBytes(5), (x) => '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'[x % 62]).join('');
      const spec: CircuitSpec = {
        circuit_id: one('circuit-id') ?? `${b62()}-${b62()}`,
        members,
        roster,
        management_type: one('management-type') ?? 'default',
        authorization_type: authType === 'challenge' ? 'challenge' : 'trust',
        display_name: one('display-name'),
        comments: one('comments'),
      };
      process.stderr.write(`circuit id ${spec.circuit_id}\n`);
      return post(createPayload(signer, need('node-id'), spec));
    }
    case 'vote': {
      const id = need('circuit-id');
      const voter = need('node-id');
      if (flags.has('accept') === flags.has('reject')) throw new UsageError('vote needs exactly one of --accept and --reject');
      const res = await call(`/admin/proposals/${encodeURIComponent(id)}`);
      if (res.status === 401 || res.status === 403) {
        const why = ((await res.json().catch(() => ({}))) as { message?: string }).message ?? `HTTP ${res.status}`;
        throw new Error(
          `the node at ${url} does not let this key read proposals (${why}). A vote goes to the voter's own node: ` +
            `--url of node ${voter}'s node API, with --key of that node's admin key`,
        );
      }
      if (!res.ok) return show(res);
      const { circuit_hash } = (await res.json()) as { circuit_hash: string };
      return post(votePayload(signer, voter, id, circuit_hash, flags.has('accept')));
    }
    case 'disband':
    case 'abandon':
    case 'purge':
    case 'remove-proposal':
      return post(idPayload(signer, need('node-id'), cmd as IdAction, need('circuit-id')));
    case 'list': {
      const what = positional[1] === 'proposals' ? 'proposals' : 'circuits';
      const q = one('status') ? `?status=${encodeURIComponent(one('status')!)}` : '';
      return show(await call(`/admin/${what}${q}`));
    }
    case 'show': {
      const what = positional[1] === 'proposal' ? 'proposals' : 'circuits';
      if (!positional[2]) throw new UsageError('show needs circuit|proposal and an id');
      return show(await call(`/admin/${what}/${encodeURIComponent(positional[2])}`));
    }
    case 'sabre-setup': {
      const r = await sabreSetup({ url, auth, signer, circuitId: need('circuit-id'), serviceId: need('service') });
      print(json, r, r.message);
      return r.ok ? 0 : 1;
    }
  }
  /* c8 ignore next */
  throw new UsageError(`unknown command circuit ${cmd}`);
}

if (isMain(import.meta.url)) void runCommand('cairn circuit', USAGE, () => run(process.argv.slice(2)), process.argv.includes('--json'));
