/**
 * `cairn circuit <command> [options]`: builds, signs and submits circuit management
 * payloads, as upstream's `circuit propose` / `circuit vote` do, and lists circuits and
 * proposals through the node API. Prints what the node accepted or answered (--json: the
 * node's HTTP status and body, `{"status", "body"}`); an answer that is not 2xx is an error
 * (exit 1) that says the node's message.
 */
import { randomBytes } from 'node:crypto';
import type { Signer } from '../crypto/secp256k1.js';
import { makeCylinderJwt } from '../auth/cylinder.js';
import { createPayload, idPayload, votePayload, type CircuitSpec, type IdAction, type ServiceSpec } from '../circuits/payloads.js';
import { sabreSetup } from './sabre-setup.js';
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
  type Answer,
} from './args.js';

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
  --url URL          node API (default CAIRN_NODE_URL, else http://<CAIRN_NODE_BIND>, else http://127.0.0.1:8085)
  --key FILE         private key file that signs the payload and the request (default ./data/keys/admin.priv,
                     or <CAIRN_DATA_DIR>/keys/admin.priv); its public key must be in the registry entry of --node-id
  --timeout SECONDS  how long one call to the node API may take (default 30)
  --json             print each answer as {"status": N, "body": …}; --quiet: nothing but the result
exit status: 0 the node accepted (2xx), 1 refused or unreachable, 2 usage or input error (a missing or bad key file)
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
  'timeout',
];
const FLAGS = ['accept', 'reject', 'peer-services'];
const COMMANDS = ['propose', 'vote', 'disband', 'abandon', 'purge', 'remove-proposal', 'list', 'show', 'sabre-setup'];

/** The body of an answer: its JSON, else its text (null when empty). */
const bodyOf = (a: Answer): unknown => a.json ?? (a.text === '' ? null : a.text);

/** One line per circuit or proposal of a list answer. */
function listLines(what: 'circuits' | 'proposals', body: unknown): string {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return JSON.stringify(body);
  if (data.length === 0) return `no ${what}`;
  const ids = (xs: unknown, key: string): string =>
    Array.isArray(xs) ? xs.map((x) => (typeof x === 'object' && x !== null ? String((x as Record<string, unknown>)[key]) : String(x))).join(',') : '';
  return data
    .map((item: Record<string, unknown>) => {
      if (what === 'circuits')
        return `${item.id} ${item.circuit_status ?? 'Active'} members ${ids(item.members, 'node_id')} services ${ids(item.roster, 'service_id')} management ${item.management_type}`;
      const c = (item.circuit ?? {}) as Record<string, unknown>;
      return `${item.circuit_id} ${item.proposal_type} by ${item.requester_node_id} members ${ids(c.members, 'node_id')} votes ${ids(item.votes, 'voter_node_id') || '-'}`;
    })
    .join('\n');
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, VALUED, FLAGS);
  const { positional, lists: opts, flags } = args;
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const out = new Output(args);
  const one = (k: string): string | undefined => opts.get(k)?.at(-1);
  const need = (k: string): string => {
    const v = one(k);
    if (v === undefined) throw new UsageError(`--${k} is required`);
    return v;
  };
  const cmd = positional[0];
  if (!cmd) throw new UsageError(`missing command (${COMMANDS.join(', ')})`);
  if (!COMMANDS.includes(cmd)) throw new UsageError(`unknown subcommand ${cmd} (${COMMANDS.join(', ')})`);
  // Everything the command line alone decides, before the key file is read and the node asked.
  const authType = one('auth-type');
  if (authType !== undefined && authType !== 'trust' && authType !== 'challenge')
    throw new UsageError(`--auth-type takes trust or challenge, got "${authType}"`);
  const status = one('status');
  if (status !== undefined && status !== 'disbanded' && status !== 'abandoned')
    throw new UsageError(`--status takes disbanded or abandoned, got "${status}"`);
  let listed: 'circuits' | 'proposals' = 'circuits';
  if (cmd === 'list') {
    const what = positional[1] ?? 'circuits';
    if (what !== 'circuits' && what !== 'proposals') throw new UsageError(`list takes circuits or proposals, got "${what}"`);
    if (positional[2] !== undefined) throw new UsageError(`unexpected argument ${positional[2]}`);
    listed = what;
  } else if (cmd === 'show') {
    if ((positional[1] !== 'circuit' && positional[1] !== 'proposal') || !positional[2])
      throw new UsageError('show needs circuit|proposal and an id');
    if (positional[3] !== undefined) throw new UsageError(`unexpected argument ${positional[3]}`);
  } else if (positional[1] !== undefined) throw new UsageError(`unexpected argument ${positional[1]}`);
  if (cmd === 'vote' && flags.has('accept') === flags.has('reject')) throw new UsageError('vote needs exactly one of --accept and --reject');
  const url = nodeUrl(one('url'));
  const timeoutMs = timeoutOption(args);
  const keyFile = one('key') ?? `${process.env.CAIRN_DATA_DIR || './data'}/keys/admin.priv`;
  // Each command's required options, checked before the key is read.
  const required: Record<string, string[]> = {
    propose: ['node-id'],
    vote: ['node-id', 'circuit-id'],
    disband: ['node-id', 'circuit-id'],
    abandon: ['node-id', 'circuit-id'],
    purge: ['node-id', 'circuit-id'],
    'remove-proposal': ['node-id', 'circuit-id'],
    'sabre-setup': ['circuit-id', 'service'],
  };
  for (const k of required[cmd] ?? []) need(k);
  const spec = cmd === 'propose' ? proposal(opts, flags, one, authType) : undefined;
  const signer: Signer = readKeyFile(keyFile, '--key');
  const auth = `Bearer Cylinder:${makeCylinderJwt(signer)}`;

  const ask = (path: string, init: RequestInit = {}): Promise<Answer> =>
    call(`${url}${path}`, { ...init, headers: { authorization: auth, ...(init.headers as Record<string, string>) } }, NODE_API, timeoutMs);
  /** A 2xx answer, or the error that says the node's message. */
  const accepted = (a: Answer, what: string): Answer => {
    if (!a.ok) throw new CliError(`${what}: the node API answered ${a.status}: ${answerMessage(a)}`, 1, { status: a.status, body: bodyOf(a) });
    return a;
  };
  const submit = async (payload: Uint8Array, what: string, extra: Record<string, unknown> = {}): Promise<number> => {
    const a = accepted(
      await ask('/admin/submit', { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from(payload) }),
      what,
    );
    out.result({ status: a.status, body: bodyOf(a), ...extra }, `${what}: the node accepted it (${a.status})`);
    return 0;
  };

  switch (cmd) {
    case 'propose': {
      const s = spec as CircuitSpec;
      return submit(createPayload(signer, need('node-id'), s), `proposed circuit ${s.circuit_id}`, { circuit_id: s.circuit_id });
    }
    case 'vote': {
      const id = need('circuit-id');
      const voter = need('node-id');
      const a = await ask(`/admin/proposals/${encodeURIComponent(id)}`);
      if (a.status === 401 || a.status === 403)
        throw new CliError(
          `the node at ${url} does not let this key read proposals (${answerMessage(a)}). A vote goes to the voter's own node: ` +
            `--url of node ${voter}'s node API, with --key of that node's admin key`,
        );
      accepted(a, `proposal ${id}`);
      const hash = (a.json as { circuit_hash?: unknown } | undefined)?.circuit_hash;
      if (typeof hash !== 'string') throw new CliError(`proposal ${id}: the node API's answer has no circuit_hash`);
      return submit(
        votePayload(signer, voter, id, hash, flags.has('accept')),
        `vote to ${flags.has('accept') ? 'accept' : 'reject'} circuit ${id} as ${voter}`,
      );
    }
    case 'disband':
    case 'abandon':
    case 'purge':
    case 'remove-proposal':
      return submit(idPayload(signer, need('node-id'), cmd as IdAction, need('circuit-id')), `${cmd} circuit ${need('circuit-id')}`);
    case 'list': {
      const a = accepted(await ask(`/admin/${listed}${status ? `?status=${encodeURIComponent(status)}` : ''}`), `list ${listed}`);
      out.result({ status: a.status, body: bodyOf(a) }, listLines(listed, bodyOf(a)));
      return 0;
    }
    case 'show': {
      const what = positional[1] === 'proposal' ? 'proposals' : 'circuits';
      const id = positional[2] as string;
      const a = accepted(await ask(`/admin/${what}/${encodeURIComponent(id)}`), `${positional[1]} ${id}`);
      out.result({ status: a.status, body: bodyOf(a) }, JSON.stringify(bodyOf(a), null, 2));
      return 0;
    }
    default: {
      const r = await sabreSetup({ url, auth, signer, circuitId: need('circuit-id'), serviceId: need('service'), timeoutMs });
      if (!r.ok) throw new CliError(r.message, 1, { submitted: r.submitted });
      out.result(r, r.message);
      return 0;
    }
  }
}

/** The circuit a `propose` describes, from its options (usage errors for what is malformed). */
function proposal(
  opts: Map<string, string[]>,
  flags: ReadonlySet<string>,
  one: (k: string) => string | undefined,
  authType: string | undefined,
): CircuitSpec {
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
    const [, svc = '', key = '', value = ''] = m;
    for (const s of roster) if (svc === '*' || svc === s.service_id) s.arguments.push([key, value]);
  }
  const b62 = (): string => Array.from(randomBytes(5), (x) => '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'[x % 62]).join('');
  return {
    circuit_id: one('circuit-id') ?? `${b62()}-${b62()}`,
    members,
    roster,
    management_type: one('management-type') ?? 'default',
    authorization_type: authType === 'challenge' ? 'challenge' : 'trust',
    display_name: one('display-name'),
    comments: one('comments'),
  };
}

if (isMain(import.meta.url)) void runCommand('cairn circuit', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
