/**
 * Ledger gateway errors: the complete upstream table (codes, titles, HTTP statuses), every
 * code the gateway emits provoked over HTTP, and unknown paths, wrong methods and oversized
 * bodies in the same error shape. Also /peers and /status with configured peers.
 */
import t, { type Test } from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, batchList } from './helpers/batches.js';
import { get, post, type Res } from './helpers/ledger-api.js';
import { LEDGER_ERRORS } from '../src/ledger-api/errors.js';

const UNKNOWN = 'f'.repeat(128);
const ADDR = `1cf126${'0'.repeat(64)}`;

/** Upstream's error table, row by row. */
const TABLE: Array<[number, number, string]> = [
  [10, 500, 'Unknown Validator Error'],
  [15, 503, 'Validator Not Ready'],
  [17, 503, 'Validator Timed Out'],
  [18, 503, 'Validator Disconnected'],
  [19, 408, 'Send timed out'],
  [20, 500, 'Invalid Validator Response'],
  [21, 500, 'Invalid Resource Header'],
  [27, 500, 'Unable to Fetch Statuses'],
  [30, 400, 'Submitted Batches Invalid'],
  [31, 429, 'Unable to Accept Batches'],
  [34, 400, 'No Batches Submitted'],
  [35, 400, 'Protobuf Not Decodable'],
  [42, 400, 'Wrong Content Type'],
  [43, 400, 'Wrong Content Type'],
  [46, 400, 'Bad Status Request'],
  [50, 404, 'Head Not Found'],
  [53, 400, 'Invalid Count Query'],
  [54, 400, 'Invalid Paging Query'],
  [57, 400, 'Invalid Sort Query'],
  [60, 400, 'Invalid Resource Id'],
  [62, 400, 'Invalid State Address'],
  [66, 400, 'Id Query Invalid or Missing'],
  [70, 404, 'Block Not Found'],
  [71, 404, 'Batch Not Found'],
  [72, 404, 'Transaction Not Found'],
  [75, 404, 'State Not Found'],
  [80, 404, 'Transaction Receipt Not Found'],
  [81, 400, 'Wrong Content Type'],
  [82, 400, 'Bad Receipts Request'],
  [83, 400, 'Id Query Invalid or Missing'],
];

let n: TestNode;
let url: string;

// Blocks held back and a queue limit of 1: nothing commits, the second submission is refused.
t.before(async () => {
  n = await startTestNode({
    CAIRN_MIN_BLOCK_INTERVAL_MS: '600000',
    CAIRN_QUEUE_MULTIPLIER: '1',
    CAIRN_QUEUE_INITIAL_AVERAGE: '1',
    CAIRN_PEERS: 'tcp://validator-2:8800,tcp://validator-1:8800',
    CAIRN_ENDPOINT: 'tcp://validator-0:8800',
  });
  url = n.ledgerUrl;
});
t.teardown(() => n?.stop());

function isError(t: Test, r: Res, status: number, code: number, what: string): void {
  t.equal(r.status, status, `${what}: HTTP ${status}`);
  t.same(Object.keys(r.json), ['error'], `${what}: error is the only key`);
  t.same(Object.keys(r.json.error ?? {}), ['code', 'message', 'title'], `${what}: code, message, title`);
  t.equal(r.json.error?.code, code, `${what}: code ${code}`);
  t.type(r.json.error?.message, 'string');
  t.notMatch(r.text, /\n/, `${what}: compact`);
  const row = TABLE.find(([c]) => c === code);
  if (row) t.equal(r.json.error.title, row[2], `${what}: title`);
  t.match(r.headers.get('content-type') ?? 'application/json', /^application\/json/);
}

t.test("the error table is upstream's", async (t) => {
  t.same(
    Object.keys(LEDGER_ERRORS).map(Number),
    TABLE.map(([c]) => c),
  );
  for (const [code, status, title] of TABLE) {
    const def = LEDGER_ERRORS[code as keyof typeof LEDGER_ERRORS];
    t.equal(def.status, status, `${code} status`);
    t.equal(def.title, title, `${code} title`);
  }
});

t.test('every code the gateway emits', async (t) => {
  const signer = newSigner();
  const ok = intkeyBatch(signer, [['set', 'e1', 1]]);
  const forged = intkeyBatch(signer, [['set', 'e2', 1]]);
  const forgedBody = Buffer.from(batchList(forged));
  // Corrupt the batch signature (the 128 hex chars of the batch id in the body).
  const at = forgedBody.indexOf(forged.id);
  forgedBody.write(forged.id[0] === '0' ? '1' : '0', at);

  const json = 'application/json';
  const octets = 'application/octet-stream';
  const cases: Array<[string, () => Promise<Res>, number, number]> = [
    ['30 bad batch signature', () => post(`${url}/batches`, forgedBody, octets), 400, 30],
    ['34 empty body', () => post(`${url}/batches`, new Uint8Array(0), octets), 400, 34],
    ['35 not a BatchList', () => post(`${url}/batches`, Buffer.from([0xff, 0xff, 0xff]), octets), 400, 35],
    ['42 wrong content type', () => post(`${url}/batches`, batchList(ok), 'text/plain'), 400, 42],
    ['43 statuses content type', () => post(`${url}/batch_statuses`, `["${UNKNOWN}"]`, 'text/plain'), 400, 43],
    ['46 statuses body', () => post(`${url}/batch_statuses`, '[1,2]', json), 400, 46],
    ['50 head not found', () => get(`${url}/batches?head=${UNKNOWN}`), 404, 50],
    ['53 limit', () => get(`${url}/blocks?limit=zero`), 400, 53],
    ['54 start', () => get(`${url}/blocks?start=0x00000000000000aa`), 400, 54],
    ['57 reverse', () => get(`${url}/transactions?reverse=true`), 400, 57],
    ['60 bad id', () => get(`${url}/transactions/xyz`), 400, 60],
    ['62 bad address', () => get(`${url}/state/zz`), 400, 62],
    ['66 statuses without id', () => get(`${url}/batch_statuses`), 400, 66],
    ['70 block', () => get(`${url}/blocks/${UNKNOWN}`), 404, 70],
    ['70 state head', () => get(`${url}/state?head=${UNKNOWN}`), 404, 70],
    ['71 batch', () => get(`${url}/batches/${UNKNOWN}`), 404, 71],
    ['72 transaction', () => get(`${url}/transactions/${UNKNOWN}`), 404, 72],
    ['75 state', () => get(`${url}/state/${ADDR}`), 404, 75],
    ['80 receipt', () => get(`${url}/receipts?id=${UNKNOWN}`), 404, 80],
    ['80 receipt (POST)', () => post(`${url}/receipts`, `["${UNKNOWN}"]`, json), 404, 80],
    ['81 receipts content type', () => post(`${url}/receipts`, `["${UNKNOWN}"]`, octets), 400, 81],
    ['82 receipts body', () => post(`${url}/receipts`, '{"id":1}', json), 400, 82],
    ['82 receipts empty array', () => post(`${url}/receipts`, '[]', json), 400, 82],
    ['82 receipts not JSON', () => post(`${url}/receipts`, 'nope', json), 400, 82],
    ['83 receipts without id', () => get(`${url}/receipts`), 400, 83],
    ['60 receipts bad id', () => get(`${url}/receipts?id=${UNKNOWN},abc`), 400, 60],
    ['60 receipts bad id (POST)', () => post(`${url}/receipts`, '["abc"]', json), 400, 60],
  ];
  for (const [what, call, status, code] of cases) isError(t, await call(), status, code, what);

  const bad = await get(`${url}/batches/${'A'.repeat(128)}`);
  t.ok(bad.json.error.message.endsWith('A'.repeat(128)), '60 names the offending id');

  // 31: the queue limit is 1 and nothing commits.
  t.equal((await post(`${url}/batches`, batchList(ok), octets)).status, 202);
  isError(t, await post(`${url}/batches`, batchList(intkeyBatch(signer, [['set', 'e3', 1]])), octets), 429, 31, '31 queue full');
});

t.test('404, 405, 413 and a plain GET of the websocket in the error shape', async (t) => {
  for (const path of ['/', '/nothing', '/batch_status', '/blocks/a/b', `/state/${ADDR}/x`]) {
    isError(t, await get(`${url}${path}`), 404, 404, `GET ${path}`);
  }
  const methods: Array<[string, string, string]> = [
    ['DELETE', '/blocks', 'GET, HEAD'],
    ['PUT', `/state/${ADDR}`, 'GET, HEAD'],
    ['POST', '/peers', 'GET, HEAD'],
    ['PATCH', '/receipts', 'GET, HEAD, POST'],
    ['DELETE', '/batch_statuses', 'GET, HEAD, POST'],
    ['POST', '/subscriptions', 'GET, HEAD'],
  ];
  for (const [method, path, allow] of methods) {
    const r = await fetch(`${url}${path}`, { method });
    const text = await r.text();
    isError(t, { status: r.status, text, json: JSON.parse(text), headers: r.headers }, 405, 405, `${method} ${path}`);
    t.equal(r.headers.get('allow'), allow, `${method} ${path}: Allow`);
  }
  const big = await fetch(`${url}/batch_statuses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: Buffer.alloc(10 * 1024 * 1024 + 1, 0x20),
  });
  const bigText = await big.text();
  isError(t, { status: big.status, text: bigText, json: JSON.parse(bigText), headers: big.headers }, 413, 413, 'oversized body');
  isError(t, await get(`${url}/subscriptions`), 400, 400, 'GET /subscriptions without an upgrade');
});

t.test('/peers and /status report the configured peers', async (t) => {
  const peers = await get(`${url}/peers`);
  t.same(peers.json, { data: ['tcp://validator-2:8800', 'tcp://validator-1:8800'], link: `${url}/peers` });
  const status = await get(`${url}/status?x`);
  t.same(status.json, {
    data: { endpoint: 'tcp://validator-0:8800', peers: [{ endpoint: 'tcp://validator-1:8800' }, { endpoint: 'tcp://validator-2:8800' }] },
    link: `${url}/status?x`,
  });
});
