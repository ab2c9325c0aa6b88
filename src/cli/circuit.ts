/**
 * `npm run -s circuit -- <command> [options]`: builds, signs and submits circuit management
 * payloads, as upstream's `circuit propose` / `circuit vote` do, and lists circuits and
 * proposals. Prints the node's HTTP status and answer; exits non-zero unless it is 2xx.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Signer } from '../crypto/secp256k1.js';
import { makeCylinderJwt } from '../node-api/cylinder.js';
import { createPayload, idPayload, votePayload, type CircuitSpec, type IdAction, type ServiceSpec } from '../circuits/payloads.js';
import { sabreSetup } from './sabre-setup.js';

const USAGE = `usage: circuit <command> [options]
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
`;

const VALUED = new Set([
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
]);

function parse(argv: string[]): { positional: string[]; opts: Map<string, string[]>; flags: Set<string> } {
  const positional: string[] = [];
  const opts = new Map<string, string[]>();
  const flags = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (!VALUED.has(name)) {
      flags.add(name);
      continue;
    }
    const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    opts.set(name, [...(opts.get(name) ?? []), value]);
  }
  return { positional, opts, flags };
}

function nodeUrl(opt: string | undefined): string {
  if (opt) return opt.replace(/\/+$/, '');
  if (process.env.CAIRN_NODE_URL) return process.env.CAIRN_NODE_URL.replace(/\/+$/, '');
  const bind = (process.env.CAIRN_NODE_BIND || '127.0.0.1:8085').replace(/^0\.0\.0\.0:/, '127.0.0.1:');
  return `http://${bind}`;
}

async function main(): Promise<number> {
  const { positional, opts, flags } = parse(process.argv.slice(2));
  const one = (k: string): string | undefined => opts.get(k)?.at(-1);
  const need = (k: string): string => {
    const v = one(k);
    if (v === undefined) throw new Error(`--${k} is required`);
    return v;
  };
  const cmd = positional[0];
  if (!cmd || flags.has('help') || flags.has('h')) {
    process.stdout.write(USAGE);
    return cmd ? 0 : 2;
  }
  const url = nodeUrl(one('url'));
  const keyFile = one('key') ?? `${process.env.CAIRN_DATA_DIR ?? './data'}/keys/admin.priv`;
  const signer = new Signer(readFileSync(keyFile, 'utf8').trim());
  const auth = `Bearer Cylinder:${makeCylinderJwt(signer)}`;

  const show = async (res: Response): Promise<number> => {
    const text = await res.text();
    process.stdout.write(`${res.status}${text ? ` ${text}` : ''}\n`);
    return res.ok ? 0 : 1;
  };
  const post = async (payload: Uint8Array): Promise<number> =>
    show(
      await fetch(`${url}/admin/submit`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/octet-stream' },
        body: Buffer.from(payload),
      }),
    );

  switch (cmd) {
    case 'propose': {
      const members = (opts.get('member') ?? []).map((m) => {
        const [nodeId, endpoint, publicKey] = m.split('=');
        if (!nodeId || !endpoint) throw new Error(`--member takes ID=ENDPOINT[=PEERING_KEY], got ${m}`);
        return { node_id: nodeId, endpoints: [endpoint], public_key: publicKey };
      });
      const roster: ServiceSpec[] = (opts.get('service') ?? []).map((s) => {
        const [serviceId, nodeId, serviceType = 'scabbard'] = s.split('::');
        if (!serviceId || !nodeId) throw new Error(`--service takes SVC::NODE[::TYPE], got ${s}`);
        return { service_id: serviceId, node_id: nodeId, service_type: serviceType, arguments: [] };
      });
      if (flags.has('peer-services')) {
        for (const s of roster) s.arguments.push(['peer_services', JSON.stringify(roster.filter((x) => x !== s).map((x) => x.service_id))]);
      }
      for (const a of opts.get('service-arg') ?? []) {
        const m = /^([^:]+)::([^=]+)=(.*)$/.exec(a);
        if (!m) throw new Error(`--service-arg takes SVC::KEY=VALUE (SVC may be *), got ${a}`);
        for (const s of roster) if (m[1] === '*' || m[1] === s.service_id) s.arguments.push([m[2]!, m[3]!]);
      }
      const b62 = (): string => Array.from(randomBytes(5), (x) => '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'[x % 62]).join('');
      const spec: CircuitSpec = {
        circuit_id: one('circuit-id') ?? `${b62()}-${b62()}`,
        members,
        roster,
        management_type: one('management-type') ?? 'default',
        authorization_type: one('auth-type') === 'challenge' ? 'challenge' : 'trust',
        display_name: one('display-name'),
        comments: one('comments'),
      };
      process.stderr.write(`circuit id ${spec.circuit_id}\n`);
      return post(createPayload(signer, need('node-id'), spec));
    }
    case 'vote': {
      const id = need('circuit-id');
      if (flags.has('accept') === flags.has('reject')) throw new Error('vote needs exactly one of --accept and --reject');
      const res = await fetch(`${url}/admin/proposals/${encodeURIComponent(id)}`, { headers: { authorization: auth } });
      if (!res.ok) return show(res);
      const { circuit_hash } = (await res.json()) as { circuit_hash: string };
      return post(votePayload(signer, need('node-id'), id, circuit_hash, flags.has('accept')));
    }
    case 'disband':
    case 'abandon':
    case 'purge':
    case 'remove-proposal':
      return post(idPayload(signer, need('node-id'), cmd as IdAction, need('circuit-id')));
    case 'list': {
      const what = positional[1] === 'proposals' ? 'proposals' : 'circuits';
      const q = one('status') ? `?status=${encodeURIComponent(one('status')!)}` : '';
      return show(await fetch(`${url}/admin/${what}${q}`, { headers: { authorization: auth } }));
    }
    case 'show': {
      const what = positional[1] === 'proposal' ? 'proposals' : 'circuits';
      if (!positional[2]) throw new Error('show needs an id');
      return show(await fetch(`${url}/admin/${what}/${encodeURIComponent(positional[2])}`, { headers: { authorization: auth } }));
    }
    case 'sabre-setup': {
      const r = await sabreSetup({ url, auth, signer, circuitId: need('circuit-id'), serviceId: need('service') });
      process.stdout.write(`${r.message}\n`);
      return r.ok ? 0 : 1;
    }
    default:
      throw new Error(`unknown command ${cmd}`);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`circuit: ${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    process.exit(2);
  },
);
