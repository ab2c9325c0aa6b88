/**
 * Bad submissions to POST /batches: each gets the upstream error code and a message that
 * names the problem, nothing is stored, and the node keeps serving.
 */
import t from 'tap';
import protobuf from 'protobufjs';
import { startTestNode } from './helpers/node.js';
import { newSigner, intkeyBatch, intkeySpec, batchList, postBatches, getJson, buildBatch, buildTransaction } from './helpers/batches.js';
import { TransactionHeader, encode } from '../src/proto/index.js';
import { sha512Hex } from '../src/crypto/secp256k1.js';
import type { BuiltTxn } from '../src/ledger/build.js';

const N = BigInt('0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141');

/** The same signature with s replaced by n - s: valid ECDSA, but high-S. */
function highS(sigHex: string): string {
  const s = BigInt(`0x${sigHex.slice(64)}`);
  return sigHex.slice(0, 64) + (N - s).toString(16).padStart(64, '0');
}

function rawTxn(header: Uint8Array, id: string, payload: Uint8Array): BuiltTxn {
  const w = protobuf.Writer.create();
  w.uint32(10).bytes(header).uint32(18).string(id).uint32(26).bytes(payload);
  return { id, bytes: w.finish() };
}

t.test('bad input is rejected with the upstream codes and stores nothing', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const signer = newSigner();
  const other = newSigner();
  const headBefore = (await getJson(`${n.ledgerUrl}/blocks?limit=1`)).json.head;

  const good = intkeyBatch(signer, [['set', 'k', 1]]);
  const goodBody = batchList(good);

  // A transaction whose header names `signer` but is signed by `other`.
  const spec = intkeySpec('set', 'k2', 1);
  const hdr = encode(TransactionHeader, {
    batcherPublicKey: signer.publicKey,
    dependencies: [],
    familyName: 'intkey',
    familyVersion: '1.0',
    inputs: spec.inputs,
    nonce: '1',
    outputs: spec.outputs,
    payloadSha512: sha512Hex(spec.payload),
    signerPublicKey: signer.publicKey,
  });
  const forged = buildBatch(signer, [rawTxn(hdr, other.sign(hdr), spec.payload)]);
  const highSTxn = buildBatch(signer, [rawTxn(hdr, highS(signer.sign(hdr)), spec.payload)]);
  const wrongHash = buildBatch(signer, [rawTxn(hdr, signer.sign(hdr), Buffer.from('other payload'))]);
  const unknownFamily = buildBatch(signer, [buildTransaction(signer, { ...spec, familyName: 'nosuch', familyVersion: '9.9' })]);
  const otherBatcher = buildBatch(signer, [buildTransaction(signer, spec, other)]);
  const txnOnly = buildTransaction(signer, spec);

  const cases: Array<[string, Uint8Array, number, number, RegExp | null, string?]> = [
    ['empty body', Buffer.alloc(0), 400, 34, null],
    ['garbage bytes', Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), 400, 35, /not a protobuf-encoded BatchList/],
    ['truncated protobuf', goodBody.subarray(0, goodBody.length - 20), 400, 35, /BatchList/],
    ['a list that decodes to no batches', Buffer.from([0x10, 0x01]), 400, 34, /no batches/],
    ['bad transaction signature', batchList(forged), 400, 30, /transaction 0: invalid signature/],
    ['high-S transaction signature', batchList(highSTxn), 400, 30, /invalid signature|does not match/],
    ['wrong payload hash', batchList(wrongHash), 400, 30, /payload_sha512 does not match/],
    ['unknown family', batchList(unknownFamily), 400, 30, /unknown transaction family "nosuch"/],
    ['batcher key is not the batch signer', batchList(otherBatcher), 400, 30, /batcher_public_key/],
    ['transaction not wrapped in a batch', txnOnly.bytes, 400, 30, /inside a Batch/],
    ['batch not wrapped in a batch list', good.bytes, 400, 30, /inside a BatchList/],
    ['wrong content type', goodBody, 400, 42, null, 'application/json'],
  ];
  for (const [what, body, status, code, msg, ct] of cases) {
    const r = await postBatches(n.ledgerUrl, body, ct);
    t.equal(r.status, status, `${what}: status`);
    t.equal(r.json.error?.code, code, `${what}: code`);
    if (msg) t.match(r.json.error.message, msg, `${what}: message`);
    t.same(Object.keys(r.json), ['error'], `${what}: error is the only key`);
  }

  // A high-S batch signature.
  const bHeader = (() => {
    const rd = protobuf.Reader.create(good.bytes);
    rd.uint32();
    return rd.bytes();
  })();
  const w = protobuf.Writer.create();
  w.uint32(10).bytes(bHeader).uint32(18).string(highS(good.id));
  const rest = protobuf.Reader.create(good.bytes);
  while (rest.pos < rest.len) {
    const tag = rest.uint32();
    if (tag >>> 3 === 3) w.uint32(26).bytes(rest.bytes());
    else rest.skipType(tag & 7);
  }
  const hsBatch = await postBatches(n.ledgerUrl, Buffer.from(new Uint8Array([10, ...encodeLen(w.finish())])));
  t.equal(hsBatch.status, 400, 'high-S batch signature');
  t.equal(hsBatch.json.error.code, 30);
  t.match(hsBatch.json.error.message, /batch 0: invalid signature/);

  // Over 10 MiB.
  const big = await fetch(`${n.ledgerUrl}/batches`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.alloc(10 * 1024 * 1024 + 1, 1),
  });
  t.equal(big.status, 413);
  t.equal(((await big.json()) as { error: { code: number } }).error.code, 413);

  // Nothing was stored, and the node still serves and commits.
  const statuses = await getJson(`${n.ledgerUrl}/batch_statuses?id=${[forged.id, highSTxn.id, wrongHash.id, unknownFamily.id, good.id].join(',')}`);
  t.same(
    statuses.json.data.map((s: { status: string }) => s.status),
    ['UNKNOWN', 'UNKNOWN', 'UNKNOWN', 'UNKNOWN', 'UNKNOWN'],
  );
  t.equal((await getJson(`${n.ledgerUrl}/blocks?limit=1`)).json.head, headBefore);
  const ok = await postBatches(n.ledgerUrl, goodBody);
  t.equal(ok.status, 202);
  const st = await getJson(`${n.ledgerUrl}/batch_statuses?id=${good.id}&wait=5`);
  t.equal(st.json.data[0].status, 'COMMITTED');
});

function encodeLen(b: Uint8Array): number[] {
  const out: number[] = [];
  let n = b.length;
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return [...out, ...b];
}

t.test('unknown routes and methods answer in the error shape', async (t) => {
  const n = await startTestNode();
  t.teardown(() => n.stop());
  const r404 = await getJson(`${n.ledgerUrl}/nothing/here`);
  t.equal(r404.status, 404);
  t.equal(r404.json.error.code, 404);
  const r405 = await fetch(`${n.ledgerUrl}/batches`, { method: 'DELETE' });
  t.equal(r405.status, 405);
  t.equal(r405.headers.get('allow'), 'GET, HEAD, POST');
  t.equal(((await r405.json()) as { error: { code: number } }).error.code, 405);
});
