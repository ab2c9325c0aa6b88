/**
 * Fuzzing one running node for a bounded time: protobuf BatchLists mutated from a valid
 * signed one, JSON bodies of the node API and the data API mutated from valid ones, random query
 * strings on list routes, and random or mutated websocket frames on /subscriptions.
 * Every answer must be a 2xx/4xx in the interface's shape (never a 5xx, never a reset),
 * the node must keep serving, and a batch committed before the fuzzing must still be
 * readable and COMMITTED after.
 *
 * Reproduce a failure with CAIRN_FUZZ_SEED=<seed printed in the comments>.
 */
import t from 'tap';
import WebSocket from 'ws';
import { startApiNode, type ApiNode } from './helpers/node-api.js';
import { newSigner, intkeyBatch, batchList, postBatches, waitCommitted } from './helpers/batches.js';

const SEED = Number(process.env.CAIRN_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32)) >>> 0;
/** Per phase: whichever comes first. About 20 s in all. */
const PHASE_MS = Number(process.env.CAIRN_FUZZ_PHASE_MS ?? 3500);
const PHASE_MAX = 3000;

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = prng(SEED);
const int = (n: number): number => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
const chance = (p: number): boolean => rnd() < p;

const NASTY_STRINGS = [
  '',
  ' ',
  '0',
  '-1',
  '-0',
  '1e309',
  'NaN',
  'null',
  'true',
  'false',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '%',
  '%zz',
  '%00',
  '\u0000',
  '\ud800',
  '😀',
  'é'.repeat(1000),
  'x'.repeat(600),
  '0'.repeat(128),
  'f'.repeat(128),
  'F'.repeat(128),
  '1cf126',
  '000000',
  '0x0000000000000001',
  '../..',
  '<x/>',
  '{}',
  '[]',
  '"',
  "'",
  '\\',
  'a,b,,c',
  ',',
  '::',
  'latest',
  '9'.repeat(30),
  '2147483648',
  '-2147483649',
  '1.5',
  ' 7 ',
  '+3',
  '1_000',
];
const NASTY_KEYS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'data', 'id', 'name', '', 'x'.repeat(300)];

function randomString(): string {
  if (chance(0.6)) return pick(NASTY_STRINGS);
  const len = pick([1, 4, 16, 66, 128, 300, 2000]);
  let s = '';
  for (let i = 0; i < len; i++) s += String.fromCharCode(chance(0.9) ? 32 + int(95) : int(0x3000));
  return s;
}

function randomValue(depth = 0): unknown {
  switch (int(depth > 3 ? 6 : 9)) {
    case 0:
      return randomString();
    case 1:
      return pick([0, -1, 1, 2 ** 53, -(2 ** 63), 1.5, 1e308, 4294967296]);
    case 2:
      return null;
    case 3:
      return chance(0.5);
    case 4:
      return pick(NASTY_STRINGS);
    case 5:
      return '';
    case 6:
      return Array.from({ length: int(4) }, () => randomValue(depth + 1));
    case 7:
      return Object.fromEntries(Array.from({ length: int(4) }, () => [pick(NASTY_KEYS), randomValue(depth + 1)]));
    default:
      return Array.from({ length: pick([0, 1, 1001]) }, () => 'x');
  }
}

/** A structural mutation of a JSON value (a copy). */
function mutate(v: unknown, depth = 0): unknown {
  if (depth > 0 && chance(0.25)) return randomValue(depth);
  if (Array.isArray(v)) {
    const out = v.map((x) => (chance(0.5) ? mutate(x, depth + 1) : x));
    if (chance(0.2)) out.push(randomValue(depth + 1));
    if (chance(0.2) && out.length > 0) out.splice(int(out.length), 1);
    return out;
  }
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(() => !chance(0.15));
    const out = entries.map(([k, x]): [string, unknown] => [k, chance(0.5) ? mutate(x, depth + 1) : x]);
    if (chance(0.3)) out.push([pick(NASTY_KEYS), randomValue(depth + 1)]);
    return Object.fromEntries(out);
  }
  return chance(0.5) ? randomValue(depth) : v;
}

/** A body text: usually a mutated value, sometimes broken JSON text. */
function mutatedText(valid: unknown): string {
  const text = JSON.stringify(mutate(valid));
  switch (int(8)) {
    case 0:
      return text.slice(0, int(text.length));
    case 1: {
      const i = int(text.length + 1);
      return text.slice(0, i) + pick(['{', '}', '"', ',', '\\', '\u0000', 'é', ']']) + text.slice(i);
    }
    case 2:
      return text.replace('{', '{"__proto__":{"name":"p","id":"p","username":"p"},');
    default:
      return text;
  }
}

function mutateBytes(valid: Uint8Array): Buffer {
  const b = Buffer.from(valid);
  switch (int(6)) {
    case 0: {
      for (let i = 0, n = 1 + int(5); i < n; i++) b[int(b.length)] = int(256);
      return b;
    }
    case 1:
      return b.subarray(0, int(b.length));
    case 2: {
      const i = int(b.length);
      return Buffer.concat([b.subarray(0, i), Buffer.from(Array.from({ length: 1 + int(20) }, () => int(256))), b.subarray(i)]);
    }
    case 3:
      return Buffer.from(Array.from({ length: int(300) }, () => int(256)));
    case 4: {
      // A huge declared length at a random place.
      const i = int(b.length);
      return Buffer.concat([b.subarray(0, i), Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), b.subarray(i)]);
    }
    default:
      return Buffer.concat([b, b.subarray(0, int(b.length))]);
  }
}

let a: ApiNode;
let committedId: string;
const failures: string[] = [];
const counts: Record<string, number> = Object.create(null) as Record<string, number>;

type Iface = 'A' | 'B' | 'C';
const SHAPES: Record<Iface, (j: any) => boolean> = {
  A: (j) => typeof j?.message === 'string',
  B: (j) => typeof j?.message === 'string',
  C: (j) =>
    j && Object.keys(j).length === 1 && typeof j.error?.code === 'number' && typeof j.error.message === 'string' && typeof j.error.title === 'string',
};

function base(iface: Iface): string {
  return iface === 'A' ? a.t.nodeUrl : iface === 'B' ? a.t.dataUrl : a.t.ledgerUrl;
}

function fail(what: string): void {
  if (failures.length < 30) failures.push(what);
}

/** Sends one request and checks the answer. */
async function probe(
  phase: string,
  iface: Iface,
  method: string,
  path: string,
  body?: string | Buffer,
  contentType = 'application/json',
  auth?: string,
): Promise<void> {
  counts[phase] = (counts[phase] ?? 0) + 1;
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = contentType;
  if (auth) headers.authorization = auth;
  const what = `${iface} ${method} ${path.slice(0, 120)} ${typeof body === 'string' ? body.slice(0, 160) : body ? `<${body.length} bytes>` : ''}`;
  let r: Response;
  try {
    r = await fetch(base(iface) + path, {
      method,
      headers,
      body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(30000),
    });
  } catch (err) {
    return fail(`${what}: no answer (${(err as Error).message})`);
  }
  const text = await r.text();
  if (r.status >= 500 || r.status < 200) return fail(`${what}: ${r.status} ${text.slice(0, 200)}`);
  if (r.status >= 300 && r.status < 400) return;
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    return fail(`${what}: ${r.status} with a body that is not JSON: ${text.slice(0, 100)}`);
  }
  if (r.status >= 400 && !SHAPES[iface](j)) fail(`${what}: ${r.status} not in the ${iface} error shape: ${text.slice(0, 200)}`);
}

async function forAWhile(step: () => Promise<void>): Promise<void> {
  const until = Date.now() + PHASE_MS;
  for (let i = 0; i < PHASE_MAX && Date.now() < until; i++) await step();
}

t.before(async () => {
  a = await startApiNode();
  const b = intkeyBatch(newSigner(), [['set', 'before-fuzz', 42]]);
  const r = await postBatches(a.t.ledgerUrl, batchList(b));
  if (r.status !== 202) throw new Error(`setup submit: ${r.status}`);
  const [st] = await waitCommitted(a.t.ledgerUrl, [b.id]);
  if (st.status !== 'COMMITTED') throw new Error('setup batch not committed');
  committedId = b.id;
  t.comment(`fuzz seed ${SEED} (CAIRN_FUZZ_SEED=${SEED} to repeat)`);
});
t.teardown(() => a?.stop());

t.test('mutated protobuf BatchLists on C and B', async () => {
  const signer = newSigner();
  const valid = batchList(
    intkeyBatch(signer, [
      ['set', 'fz', 1],
      ['inc', 'fz', 2],
    ]),
    intkeyBatch(signer, [['set', 'fy', 3]]),
  );
  await forAWhile(async () => {
    const iface = pick(['C', 'B'] as const);
    await probe(
      'protobuf',
      iface,
      'POST',
      '/batches',
      mutateBytes(valid),
      pick(['application/octet-stream', 'application/octet-stream', 'application/json', 'text/plain']),
    );
  });
});

t.test('mutated JSON bodies on A', async () => {
  const admin = a.admin;
  const bodies: Array<[string, string, unknown, boolean]> = [
    ['POST', '/biome/register', { username: 'fuzzer', hashed_password: 'pw' }, false],
    ['POST', '/biome/login', { username: 'fuzzer', hashed_password: 'pw' }, false],
    ['POST', '/biome/token', { token: 'x' }, false],
    ['POST', '/authorization/roles', { role_id: 'fz', display_name: 'Fz', permissions: ['registry.read'] }, true],
    ['PATCH', '/authorization/roles/fz', { display_name: 'Fz2', permissions: ['registry.read'] }, true],
    ['POST', '/authorization/assignments', { identity_type: 'user', identity: 'someone', roles: ['fz'] }, true],
    [
      'POST',
      '/registry/nodes',
      { identity: 'fz-node', endpoints: ['tcp://fz:1'], display_name: 'Fz', keys: [`02${'ab'.repeat(32)}`], metadata: { a: 'b' } },
      true,
    ],
    ['PUT', '/registry/nodes/fz-node', { identity: 'fz-node', endpoints: ['tcp://fz:2'], display_name: 'Fz', keys: ['k'], metadata: {} }, true],
    ['PUT', '/biome/users/nobody', { username: 'x', hashed_password: 'y', new_password: 'z' }, true],
  ];
  await forAWhile(async () => {
    const [method, path, valid, authed] = pick(bodies);
    await probe('A json', 'A', method, path, mutatedText(valid), 'application/json', authed ? `Bearer ${admin}` : undefined);
  });
});

t.test('mutated JSON bodies on B', async () => {
  const bodies: Array<[string, string, unknown]> = [
    [
      'POST',
      '/organization',
      { data: [{ id: 'fz-org', name: 'Fz', alternate_ids: ['gs1_company_prefix:0614141'], metadata: [{ key: 'a', value: 'b' }] }] },
    ],
    ['PUT', '/organization/fz-org', { name: 'Fz 2', locations: [] }],
    ['POST', '/role/fz-org', { data: [{ name: 'r', description: 'd', permissions: ['schema::can-create-schema'] }] }],
    ['POST', '/schema', { data: [{ name: 's', owner: 'fz-org', properties: [{ name: 'p', data_type: 'STRING', required: true }] }] }],
    ['POST', '/product', { data: [{ product_id: '06141410000017', owner: 'fz-org', properties: [{ name: 'p', data_type: 'STRING', value: 'v' }] }] }],
    ['POST', '/location', { data: [{ location_id: '0614141000001', owner: 'fz-org', properties: [] }] }],
    ['POST', '/organization/fz-org/agent', { data: [{ public_key: `02${'ab'.repeat(32)}`, roles: ['admin'] }] }],
    [
      'POST',
      '/purchase_order',
      {
        data: [
          {
            uid: 'po-1',
            buyer_org_id: 'fz-org',
            seller_org_id: 'fz-org',
            workflow_state: 'issued',
            create_version_payload: { version_id: 'v1', workflow_state: 'proposed', revision: { order_xml_v3_4: '<x/>' } },
          },
        ],
      },
    ],
  ];
  await forAWhile(async () => {
    const [method, path, valid] = pick(bodies);
    await probe('B json', 'B', method, path, mutatedText(valid));
  });
});

t.test('random query strings on list routes of A, B and C', async () => {
  const routes: Array<[Iface, string]> = [
    ['C', '/batches'],
    ['C', '/transactions'],
    ['C', '/blocks'],
    ['C', '/state'],
    ['C', '/batch_statuses'],
    ['C', '/receipts'],
    ['C', '/peers'],
    ['C', '/status'],
    ['B', '/organization'],
    ['B', '/agent'],
    ['B', '/product'],
    ['B', '/location'],
    ['B', '/schema'],
    ['B', '/purchase_order'],
    ['B', '/batch_statuses'],
    ['B', '/role/fz-org'],
    ['A', '/registry/nodes'],
    ['A', '/authorization/roles'],
    ['A', '/authorization/assignments'],
    ['A', '/biome/users'],
    ['A', '/oauth/users'],
  ];
  const keys = [
    'limit',
    'start',
    'head',
    'reverse',
    'id',
    'address',
    'offset',
    'service_id',
    'filter',
    'org_id',
    'signer',
    'buyer_org_id',
    'seller_org_id',
    'has_accepted_version',
    'is_open',
    'wait',
    'x',
    '__proto__',
  ];
  await forAWhile(async () => {
    const [iface, path] = pick(routes);
    const parts: string[] = [];
    for (let i = 0, n = int(4); i < n; i++) {
      const k = pick(keys);
      // A positive wait would only make the run slow; non-positive ones must not wait.
      const v = k === 'wait' ? pick(['-1', '-0', '0', 'false', ' -5 ']) : k === 'id' && chance(0.3) ? committedId : randomString();
      const raw = chance(0.15);
      const wellFormed = v.replace(/[\ud800-\udfff]/g, '?');
      parts.push(`${raw ? k : encodeURIComponent(k)}=${raw ? wellFormed.replace(/[\s#&]/g, '') : encodeURIComponent(wellFormed)}`);
    }
    const q = parts.join('&');
    await probe(
      'queries',
      iface,
      'GET',
      `${path}${q ? '?' : ''}${q}`.slice(0, 7000),
      undefined,
      undefined,
      iface === 'A' ? `Bearer ${a.admin}` : undefined,
    );
  });
});

t.test('random and mutated frames on /subscriptions', async (t) => {
  const url = `${a.t.ledgerUrl.replace(/^http/, 'ws')}/subscriptions`;
  const valid: unknown[] = [
    { action: 'subscribe', address_prefixes: ['1cf126'] },
    { action: 'subscribe' },
    { action: 'unsubscribe' },
    { action: 'get_block_deltas', block_id: 'f'.repeat(128), address_prefixes: [] },
  ];
  const until = Date.now() + PHASE_MS;
  let sockets = 0;
  while (Date.now() < until && (counts.ws ?? 0) < PHASE_MAX) {
    sockets++;
    const ws = new WebSocket(url);
    const opened = await new Promise<boolean>((resolve) => {
      ws.on('open', () => resolve(true));
      ws.on('error', () => resolve(false));
    });
    if (!opened) {
      fail('ws: could not open a socket');
      break;
    }
    let bad = '';
    ws.on('message', (d, isBinary) => {
      try {
        if (isBinary) throw new Error('binary');
        JSON.parse(d.toString('utf8'));
      } catch {
        bad ||= `ws: a frame that is not JSON: ${d.toString('utf8').slice(0, 100)}`;
      }
    });
    let closedBy = 0;
    ws.on('close', (code) => (closedBy = code));
    for (let i = 0, n = 1 + int(60); i < n && ws.readyState === 1; i++) {
      counts.ws = (counts.ws ?? 0) + 1;
      if (chance(0.1)) ws.send(Buffer.from(Array.from({ length: int(200) }, () => int(256))) as unknown as string);
      else ws.send(mutatedText(pick(valid)));
    }
    await new Promise((r) => setTimeout(r, 20));
    if (bad) fail(bad);
    // The node may close a socket for a frame over its limit (1006/1009); any other close is a failure.
    if (closedBy !== 0 && closedBy !== 1006 && closedBy !== 1009) fail(`ws: closed with ${closedBy}`);
    ws.terminate();
  }
  t.comment(`ws sockets: ${sockets}`);
});

t.test('the node still serves, and the batch committed before is still COMMITTED', async (t) => {
  t.comment(`inputs tried: ${JSON.stringify(counts)} (seed ${SEED})`);
  t.same(failures, [], `no 5xx, reset or badly shaped answer (seed ${SEED})`);
  const st = (await (await fetch(`${a.t.ledgerUrl}/batch_statuses?id=${committedId}`)).json()) as { data: Array<{ status: string }> };
  t.equal(st.data[0]!.status, 'COMMITTED');
  const b = await fetch(`${a.t.ledgerUrl}/batches/${committedId}`);
  t.equal(b.status, 200);
  t.equal((await fetch(`${a.t.dataUrl}/batch_statuses?id=${committedId}`)).status, 200);
  t.equal((await fetch(`${a.t.nodeUrl}/biome/users`, { headers: { authorization: `Bearer ${a.admin}` } })).status, 200);
  const fresh = intkeyBatch(newSigner(), [['set', 'after-fuzz', 1]]);
  t.equal((await postBatches(a.t.ledgerUrl, batchList(fresh))).status, 202);
  const [after] = await waitCommitted(a.t.ledgerUrl, [fresh.id]);
  t.equal(after.status, 'COMMITTED', 'the node still commits');
});
