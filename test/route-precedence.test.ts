/**
 * Which refusal a request that is wrong twice gets, on a running node, for the routes
 * whose lookup comes before their input (src/http/route.ts: enter, then `load`, then the
 * query and body parsers, then the handler): the lookup's 404 before the parsers' 400s,
 * the ledger's head lookup before `reverse`, and the data API's signer checked after
 * the path and body, as before the parsers were declared.
 */
import t from 'tap';
import { startTestNode, type TestNode } from './helpers/node.js';
import { Api, newKey, w } from './helpers/data-api.js';

let node: TestNode;
let api: Api;
const UNKNOWN = 'f'.repeat(128);

t.before(async () => {
  node = await startTestNode();
  api = new Api(node.dataUrl);
  const r = await api.post(w('/organization'), { data: [{ id: 'acme', name: 'Acme Corp' }] });
  t.equal(r.status, 200, JSON.stringify(r.json));
});
t.teardown(() => node.stop());

t.test('data API: the lookup refuses before the page is read', async (t) => {
  const nope = await api.get('/organization/nope/agent?limit=0&offset=x');
  t.same([nope.status, nope.json.message], [404, 'Organization nope not found']);
  const bad = await api.get('/organization/acme/agent?limit=0');
  t.equal(bad.status, 400);
  t.match(bad.json.message, /^`limit` must be an integer from 1 to 1000/);
  t.equal((await api.get('/role/nope?limit=-1')).status, 404);
  t.equal((await api.get('/role/acme/nope?offset=%00')).status, 404);
  t.equal((await api.get('/purchase_order/nope/version?limit=huge')).status, 404);
  t.equal((await api.get('/purchase_order/nope/version/v1/revision?limit=huge')).status, 404);
  const ok = await api.get('/organization/acme/agent?limit=1');
  t.equal(ok.status, 200);
  t.equal(ok.json.data.length, 1);
});

t.test('data API: the signer is checked after the path and the body', async (t) => {
  const key = newKey().publicKey;
  const body = { data: [{ public_key: key, roles: [] }] };
  // Bad body and bad signer: the body's 400.
  const both = await api.call('POST', '/organization/nope/agent?signer=zz', undefined, '{"data": [');
  t.equal(both.status, 400);
  t.match(both.json.message, /^Malformed JSON body/);
  // Unknown organization and bad signer: the 404.
  const org = await api.post('/organization/nope/agent?signer=zz', body);
  t.same([org.status, org.json.message], [404, 'Organization nope not found']);
  // Only the signer wrong: its 400.
  const signer = await api.post('/organization/acme/agent?signer=zz', body);
  t.equal(signer.status, 400);
  t.match(signer.json.message, /^`signer` must be a compressed secp256k1 public key/);
  // A hostile wait is read as the long one, never refused; the malformed id is.
  const statuses = await api.get('/batch_statuses?id=%3Cscript%3E&wait=__proto__');
  t.equal(statuses.status, 400);
  t.match(statuses.json.message, /^`id`: "<script>" is neither a batch id/);
});

t.test('ledger gateway: the head is looked up before `reverse` is read', async (t) => {
  const get = async (path: string): Promise<{ status: number; code: number | undefined }> => {
    const r = await fetch(node.ledgerUrl + path);
    const j = (await r.json()) as { error?: { code: number } };
    return { status: r.status, code: j.error?.code };
  };
  t.same(await get(`/batches?head=${UNKNOWN}&reverse=nonsense`), { status: 404, code: 50 });
  t.same(await get(`/transactions?head=${UNKNOWN}&reverse=nonsense`), { status: 404, code: 50 });
  t.same(await get(`/blocks?head=${UNKNOWN}&reverse=nonsense`), { status: 404, code: 50 });
  t.same(await get('/batches?reverse=nonsense'), { status: 400, code: 57 });
  t.same(await get('/blocks?reverse=nonsense'), { status: 400, code: 57 });
  // Blocks picked by id do not read `reverse` (upstream ignores it there).
  t.same(await get(`/blocks?id=${UNKNOWN}&reverse=nonsense`), { status: 200, code: undefined });
  // State: the head (404 code 70) before the address (400) and before `reverse`.
  t.same(await get(`/state/zz?head=${UNKNOWN}`), { status: 404, code: 70 });
  t.same(await get(`/state?head=${UNKNOWN}&address=zz&reverse=nonsense`), { status: 404, code: 70 });
  t.same(await get('/state?address=zz&reverse=nonsense'), { status: 400, code: 62 });
});
