/**
 * Damaged data directories: a copy of a stopped node's directory is truncated, zeroed or
 * bit-flipped by the test, and the node must refuse it with a message naming the file
 * (never SIGBUS, never serve or seal damaged data); `npm run check` must report it too.
 */
import t from 'tap';
import { cpSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestNode } from './helpers/node.js';
import { startRefused, runToExit } from './helpers/child.js';
import {
  newSigner,
  intkeyBatch,
  intkeySpec,
  batchList,
  postBatches,
  waitCommitted,
  getJson,
  buildBatch,
  buildTransaction,
} from './helpers/batches.js';
import { intkeyAddress } from '../src/families/intkey.js';

const dirs: string[] = [];
t.teardown(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const temp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'cairn-corrupt-'));
  dirs.push(d);
  return d;
};

/** Replaces every occurrence of `find` in the file (the pages LMDB left behind included). */
function patch(file: string, find: Buffer, edit: (copy: Buffer) => void): number {
  const buf = readFileSync(file);
  let n = 0;
  for (let i = buf.indexOf(find); i >= 0; i = buf.indexOf(find, i + 1)) {
    const part = Buffer.from(buf.subarray(i, i + find.length));
    edit(part);
    part.copy(buf, i);
    n++;
  }
  writeFileSync(file, buf);
  return n;
}

// One base directory: committed blocks, a known state leaf, and a batch left pending
// (its dependency never arrives) so that the pending pool holds a record at stop.
const signer = newSigner();
const NAME = 'corruptme';
const address = intkeyAddress(NAME);
const base = temp();
let leafRaw: Buffer;
let pendingBatch: { id: string; payload: Buffer };

t.before(async () => {
  // A checkpoint every block: the head's leaves are in Merkle records, where the patches below look.
  const n = await startTestNode({ CAIRN_STATE_CHECKPOINT_BLOCKS: '1' }, base);
  const batches = [intkeyBatch(signer, [['set', NAME, 12345]]), intkeyBatch(signer, [['set', 'other', 1]])];
  for (const b of batches) await postBatches(n.ledgerUrl, batchList(b));
  await waitCommitted(
    n.ledgerUrl,
    batches.map((b) => b.id),
    30,
  );
  const leaf = await getJson(`${n.ledgerUrl}/state/${address}`);
  leafRaw = Buffer.from(leaf.json.data, 'base64');
  const spec = intkeySpec('set', 'waiting', 99, { dependencies: ['ab'.repeat(64)] });
  const blocked = buildBatch(signer, [buildTransaction(signer, spec)]);
  t.equal((await postBatches(n.ledgerUrl, batchList(blocked))).status, 202);
  pendingBatch = { id: blocked.id, payload: Buffer.from(spec.payload) };
  await n.stop({ keepData: true });
});

const copy = (): string => {
  const d = temp();
  cpSync(base, d, { recursive: true });
  return d;
};

const check = (dir: string) => runToExit(['src/cli/check.ts', '--data-dir', dir], process.env);

t.test('the intact copy starts and checks clean', async (t) => {
  const d = copy();
  const c = await check(d);
  t.equal(c.code, 0, c.log);
  t.match(c.log, /0 problems/);
  const n = await startTestNode({}, d);
  const st = await getJson(`${n.ledgerUrl}/batch_statuses?id=${pendingBatch.id}`);
  t.equal(st.json.data[0].status, 'PENDING', 'the blocked batch is still pending');
  t.equal((await getJson(`${n.ledgerUrl}/status`)).status, 200);
  await n.stop({ keepData: true });
});

t.test('a truncated ledger.mdb is refused by name, no SIGBUS', async (t) => {
  const d = copy();
  const file = join(d, 'ledger.mdb');
  truncateSync(file, Math.floor(statSync(file).size / 2));
  const r = await startRefused(d);
  t.equal(r.code, 1, r.log);
  t.match(r.log, `${file} is`);
  t.match(r.log, /truncated/);
  t.match(r.log, /restore the directory from a backup/);
  const c = await check(d);
  t.not(c.code, 0);
  t.match(c.log, `${file} is`);
});

t.test('a zeroed meta page of ledger.mdb is refused by name', async (t) => {
  const d = copy();
  const file = join(d, 'ledger.mdb');
  const buf = readFileSync(file);
  buf.fill(0, 0, 4096);
  writeFileSync(file, buf);
  const r = await startRefused(d);
  t.equal(r.code, 1, r.log);
  t.match(r.log, `${file} meta page 0`);
  const c = await check(d);
  t.not(c.code, 0);
  t.match(c.log, `${file} meta page 0`);
});

t.test('pending.mdb truncated to 0 or deleted is refused: acknowledged batches would be lost', async (t) => {
  const d = copy();
  truncateSync(join(d, 'pending.mdb'), 0);
  const r = await startRefused(d);
  t.equal(r.code, 1, r.log);
  t.match(r.log, `${join(d, 'pending.mdb')} is empty`);

  const d2 = copy();
  rmSync(join(d2, 'pending.mdb'));
  rmSync(join(d2, 'pending.mdb-lock'), { force: true });
  const r2 = await startRefused(d2);
  t.equal(r2.code, 1, r2.log);
  t.match(r2.log, `${join(d2, 'pending.mdb')} is not the pending pool this ledger acknowledged batches into`);
  const c = await check(d2);
  t.not(c.code, 0);
  t.match(c.log, 'is not the pending pool');
});

t.test('a bit flip in a pending record is refused naming the file and the record', async (t) => {
  const d = copy();
  const file = join(d, 'pending.mdb');
  const hits = patch(file, pendingBatch.payload, (b) => (b[b.length - 1]! ^= 0x01));
  t.ok(hits >= 1, 'the pending payload is in the file');
  const r = await startRefused(d);
  t.equal(r.code, 1, r.log);
  t.match(r.log, `${file}: pending record`);
  t.match(r.log, 'checksum mismatch');
  const c = await check(d);
  t.not(c.code, 0);
  t.match(c.log, `${file}: pending record`);
});

t.test('an altered state leaf is never served: 503 in the error shape, and /status tells', async (t) => {
  const d = copy();
  const file = join(d, 'ledger.mdb');
  // The Merkle record ends with the address' last bytes then the raw value (receipts and
  // blocks frame the value differently), so this pattern hits only state records.
  const tail = Buffer.from(address.slice(-8), 'hex');
  const hits = patch(file, Buffer.concat([tail, leafRaw]), (b) => (b[b.length - 1]! ^= 0x01));
  t.ok(hits >= 1, 'the state leaf is in the file');
  const c = await check(d);
  t.not(c.code, 0, c.log);
  t.match(c.log, /merkle record [0-9a-f]{64}/);
  const n = await startTestNode({}, d);
  t.teardown(() => n.stop({ keepData: true }));
  t.equal((await getJson(`${n.ledgerUrl}/status`)).status, 200, 'no fault known yet');
  const one = await getJson(`${n.ledgerUrl}/state/${address}`);
  t.equal(one.status, 503, JSON.stringify(one.json));
  t.match(one.json, { error: { code: 503, title: 'Service Unavailable', message: /integrity check/ } });
  t.notOk(JSON.stringify(one.json).includes(leafRaw.toString('base64')), 'no data served');
  const list = await getJson(`${n.ledgerUrl}/state?address=${address.slice(0, 6)}`);
  t.equal(list.status, 503);
  const status = await getJson(`${n.ledgerUrl}/status`);
  t.equal(status.status, 503);
  t.match(status.json.error.message, /integrity check/);
});

t.test('a batch whose payload does not match payload_sha512 is INVALID, never sealed', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const spec = intkeySpec('set', 'tampered', 1000);
  const b = buildBatch(signer, [buildTransaction(signer, spec)]);
  const bytes = Buffer.from(b.bytes);
  const at = bytes.indexOf(Buffer.from(spec.payload));
  const value = Buffer.from(spec.payload).indexOf(Buffer.from([0x19, 0x03, 0xe8])); // CBOR 1000
  t.ok(at >= 0 && value >= 0);
  bytes[at + value + 2] = 0xe9; // still a valid intkey set, of 1001; signatures untouched
  await n.node.ledger.submitTrusted([{ id: b.id, bytes }]);
  const [s] = await waitCommitted(n.ledgerUrl, [b.id], 30);
  t.equal(s.status, 'INVALID');
  t.match(s.invalid_transactions[0].message, /payload_sha512/);
  t.equal((await getJson(`${n.ledgerUrl}/state/${intkeyAddress('tampered')}`)).status, 404);
});
