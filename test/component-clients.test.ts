/**
 * The validator's client requests on the component endpoint, sent as upstream's REST API
 * process sends them (sawtooth-sdk package protobufs over a ZeroMQ DEALER), each compared
 * with the REST gateway's answer for the same data: submit (QUEUE_FULL as 429), batch
 * status with wait, block / batch / transaction get and list with paging, state get and
 * list, receipts, peers, status; malformed ids, heads and paging get upstream's statuses.
 */
import t from 'tap';
import { startTestNode } from './helpers/node.js';
import { newSigner, batchList, postBatches, getJson, waitCommitted, intkeyBatch } from './helpers/batches.js';
import { ZmqClient, pb, MT } from './helpers/zmq-client.js';
import { intkeyAddress } from '../src/families/intkey.js';

const OK = 1;
const NO_RESOURCE = 5;
const INVALID_ID = 8;

t.test('client requests answer what the REST gateway answers', async (t) => {
  const n = await startTestNode({
    CAIRN_COMPONENT_BIND: '127.0.0.1:0',
    CAIRN_QUEUE_MULTIPLIER: '3',
    CAIRN_QUEUE_INITIAL_AVERAGE: '1',
    CAIRN_MAX_BODY_BYTES: String(2 * 1024 * 1024),
  });
  t.teardown(() => n.stop());
  const c = new ZmqClient(n.node.ledger.componentEndpoint ?? '');
  t.teardown(() => c.close());
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const ask = async (type: number, reqType: any, msg: object, resType: any): Promise<any> => {
    const r = await c.request(type, reqType.encode(msg).finish());
    t.not(r.type, MT.NETWORK_ACK, `message type ${type} is served`);
    return resType.decode(r.content);
  };
  const rest = async (path: string): Promise<{ status: number; json: any }> => getJson(`${n.ledgerUrl}${path}`);

  // Submit over ZeroMQ; the status waits for the commit.
  const signer = newSigner();
  const batches = [
    intkeyBatch(signer, [['set', 'a', 1]]),
    intkeyBatch(signer, [['set', 'b', 2]]),
    intkeyBatch(signer, [
      ['set', 'c', 3],
      ['inc', 'a', 4],
    ]),
  ];
  const decodedBatches = batches.map((b) => pb.BatchList.decode(batchList(b)).batches[0]);
  for (const b of decodedBatches) {
    const sub = await ask(MT.CLIENT_BATCH_SUBMIT_REQUEST, pb.ClientBatchSubmitRequest, { batches: [b] }, pb.ClientBatchSubmitResponse);
    t.equal(sub.status, OK, 'submitted');
    const st = await ask(
      MT.CLIENT_BATCH_STATUS_REQUEST,
      pb.ClientBatchStatusRequest,
      { batchIds: [b.headerSignature], wait: true, timeout: 30 },
      pb.ClientBatchStatusResponse,
    );
    t.equal(st.batchStatuses[0].status, pb.ClientBatchStatus.Status.COMMITTED, 'committed, after the wait');
  }
  const ids = batches.map((b) => b.id);
  t.same(
    (await waitCommitted(n.ledgerUrl, ids)).map((s: { status: string }) => s.status),
    ['COMMITTED', 'COMMITTED', 'COMMITTED'],
    'REST agrees',
  );
  const garbage = await ask(
    MT.CLIENT_BATCH_SUBMIT_REQUEST,
    pb.ClientBatchSubmitRequest,
    { batches: [{ ...decodedBatches[0], headerSignature: 'ab'.repeat(64) }] },
    pb.ClientBatchSubmitResponse,
  );
  t.equal(garbage.status, pb.ClientBatchSubmitResponse.Status.INVALID_BATCH, 'a batch whose signature does not verify');
  // Larger than a REST body may be (413 there): refused unread.
  const huge = await c.request(MT.CLIENT_BATCH_SUBMIT_REQUEST, Buffer.alloc(2 * 1024 * 1024 + 1, 0x0a));
  t.equal(pb.ClientBatchSubmitResponse.decode(huge.content).status, pb.ClientBatchSubmitResponse.Status.INVALID_BATCH, 'an oversize submit');
  t.equal((await postBatches(n.ledgerUrl, Buffer.alloc(2 * 1024 * 1024 + 1, 0x0a))).status, 413, 'REST: 413');
  // Back-pressure: four batches at once over a limit of three, as 429 on REST.
  const four = [1, 2, 3, 4].map((i) => intkeyBatch(signer, [['set', `q${i}`, i]]));
  const full = await ask(
    MT.CLIENT_BATCH_SUBMIT_REQUEST,
    pb.ClientBatchSubmitRequest,
    { batches: four.map((b) => pb.BatchList.decode(batchList(b)).batches[0]) },
    pb.ClientBatchSubmitResponse,
  );
  t.equal(full.status, pb.ClientBatchSubmitResponse.Status.QUEUE_FULL, 'QUEUE_FULL');
  t.equal((await postBatches(n.ledgerUrl, batchList(...four))).status, 429, 'REST: 429');
  const statuses = await ask(
    MT.CLIENT_BATCH_STATUS_REQUEST,
    pb.ClientBatchStatusRequest,
    { batchIds: [ids[0], four[0]?.id] },
    pb.ClientBatchStatusResponse,
  );
  t.same(
    statuses.batchStatuses.map((s: { status: number }) => s.status),
    [pb.ClientBatchStatus.Status.COMMITTED, pb.ClientBatchStatus.Status.UNKNOWN],
  );
  t.equal(
    (await ask(MT.CLIENT_BATCH_STATUS_REQUEST, pb.ClientBatchStatusRequest, { batchIds: ['nope'] }, pb.ClientBatchStatusResponse)).status,
    INVALID_ID,
  );
  t.equal(
    (await ask(MT.CLIENT_BATCH_STATUS_REQUEST, pb.ClientBatchStatusRequest, { batchIds: [] }, pb.ClientBatchStatusResponse)).status,
    NO_RESOURCE,
  );
  // An INVALID batch: the same transaction and message as REST shows.
  const badBatch = intkeyBatch(signer, [['inc', 'never-set', 1]]);
  t.equal((await postBatches(n.ledgerUrl, batchList(badBatch))).status, 202);
  const invalid = await ask(
    MT.CLIENT_BATCH_STATUS_REQUEST,
    pb.ClientBatchStatusRequest,
    { batchIds: [badBatch.id], wait: true, timeout: 30 },
    pb.ClientBatchStatusResponse,
  );
  const restInvalid = (await waitCommitted(n.ledgerUrl, [badBatch.id]))[0];
  t.equal(invalid.batchStatuses[0].status, pb.ClientBatchStatus.Status.INVALID);
  t.equal(restInvalid.status, 'INVALID');
  t.equal(invalid.batchStatuses[0].invalidTransactions[0].transactionId, restInvalid.invalid_transactions[0].id);
  t.equal(invalid.batchStatuses[0].invalidTransactions[0].message, restInvalid.invalid_transactions[0].message);

  // Blocks: get by id, number, batch id, transaction id; the list and its paging.
  const restBlocks = (await rest('/blocks?limit=2')).json;
  const headId = restBlocks.data[0].header_signature;
  const byId = await ask(MT.CLIENT_BLOCK_GET_BY_ID_REQUEST, pb.ClientBlockGetByIdRequest, { blockId: headId }, pb.ClientBlockGetResponse);
  t.equal(byId.status, OK);
  t.equal(byId.block.headerSignature, headId);
  t.equal(byId.block.batches[0].headerSignature, restBlocks.data[0].batches[0].header_signature);
  const byNum = await ask(MT.CLIENT_BLOCK_GET_BY_NUM_REQUEST, pb.ClientBlockGetByNumRequest, { blockNum: 1 }, pb.ClientBlockGetResponse);
  t.equal(byNum.block.headerSignature, (await rest('/blocks?start=0x0000000000000001&limit=1')).json.data[0].header_signature);
  const byBatch = await ask(
    MT.CLIENT_BLOCK_GET_BY_BATCH_ID_REQUEST,
    pb.ClientBlockGetByBatchIdRequest,
    { batchId: ids[2] },
    pb.ClientBlockGetResponse,
  );
  t.equal(byBatch.block.headerSignature, headId);
  const txnId = restBlocks.data[0].batches[0].transactions[1].header_signature;
  const byTxn = await ask(
    MT.CLIENT_BLOCK_GET_BY_TRANSACTION_ID_REQUEST,
    pb.ClientBlockGetByTransactionIdRequest,
    { transactionId: txnId },
    pb.ClientBlockGetResponse,
  );
  t.equal(byTxn.block.headerSignature, headId);
  t.equal(
    (await ask(MT.CLIENT_BLOCK_GET_BY_NUM_REQUEST, pb.ClientBlockGetByNumRequest, { blockNum: 99 }, pb.ClientBlockGetResponse)).status,
    NO_RESOURCE,
  );
  t.equal(
    (await ask(MT.CLIENT_BLOCK_GET_BY_ID_REQUEST, pb.ClientBlockGetByIdRequest, { blockId: 'zz' }, pb.ClientBlockGetResponse)).status,
    INVALID_ID,
  );
  t.equal(
    (await ask(MT.CLIENT_BLOCK_GET_BY_ID_REQUEST, pb.ClientBlockGetByIdRequest, { blockId: 'ab'.repeat(64) }, pb.ClientBlockGetResponse)).status,
    NO_RESOURCE,
  );

  const blockList = await ask(MT.CLIENT_BLOCK_LIST_REQUEST, pb.ClientBlockListRequest, { paging: { limit: 2 } }, pb.ClientBlockListResponse);
  t.equal(blockList.status, OK);
  t.same(
    blockList.blocks.map((b: { headerSignature: string }) => b.headerSignature),
    restBlocks.data.map((b: { header_signature: string }) => b.header_signature),
  );
  t.equal(blockList.headId, restBlocks.head);
  t.equal(blockList.paging.next, restBlocks.paging.next_position, 'the same next marker as REST');
  const page2 = await ask(
    MT.CLIENT_BLOCK_LIST_REQUEST,
    pb.ClientBlockListRequest,
    { paging: { limit: 2, start: blockList.paging.next } },
    pb.ClientBlockListResponse,
  );
  const restPage2 = (await rest(`/blocks?limit=2&start=${blockList.paging.next}`)).json;
  t.same(
    page2.blocks.map((b: { headerSignature: string }) => b.headerSignature),
    restPage2.data.map((b: { header_signature: string }) => b.header_signature),
  );
  t.equal(page2.paging.next, '', 'the last page: no next');
  t.equal(
    (await ask(MT.CLIENT_BLOCK_LIST_REQUEST, pb.ClientBlockListRequest, { paging: { start: 'nope' } }, pb.ClientBlockListResponse)).status,
    pb.ClientBlockListResponse.Status.INVALID_PAGING,
  );
  t.equal(
    (await ask(MT.CLIENT_BLOCK_LIST_REQUEST, pb.ClientBlockListRequest, { headId: 'ab'.repeat(64) }, pb.ClientBlockListResponse)).status,
    pb.ClientBlockListResponse.Status.NO_ROOT,
  );

  // Reversed (what upstream's REST API process sends for ?reverse), and a sort key upstream refuses.
  const reverseBlocks = await ask(
    MT.CLIENT_BLOCK_LIST_REQUEST,
    pb.ClientBlockListRequest,
    { paging: { limit: 2 }, sorting: [{ keys: ['block_num'], reverse: true }] },
    pb.ClientBlockListResponse,
  );
  const restReverse = (await rest('/blocks?reverse&limit=2')).json;
  t.same(
    reverseBlocks.blocks.map((b: { headerSignature: string }) => b.headerSignature),
    restReverse.data.map((b: { header_signature: string }) => b.header_signature),
    'genesis first',
  );
  t.equal(reverseBlocks.paging.next, restReverse.paging.next_position);
  const reverseBatches = await ask(
    MT.CLIENT_BATCH_LIST_REQUEST,
    pb.ClientBatchListRequest,
    { paging: { limit: 2 }, sorting: [{ keys: ['default'], reverse: true }] },
    pb.ClientBatchListResponse,
  );
  t.same(
    reverseBatches.batches.map((b: { headerSignature: string }) => b.headerSignature),
    (await rest('/batches?reverse&limit=2')).json.data.map((b: { header_signature: string }) => b.header_signature),
  );
  t.equal(
    (await ask(MT.CLIENT_BLOCK_LIST_REQUEST, pb.ClientBlockListRequest, { sorting: [{ keys: ['nope'] }] }, pb.ClientBlockListResponse)).status,
    pb.ClientBlockListResponse.Status.INVALID_SORT,
  );
  const reverseState = await ask(
    MT.CLIENT_STATE_LIST_REQUEST,
    pb.ClientStateListRequest,
    { address: '1cf126', paging: { limit: 2 }, sorting: [{ keys: ['default'], reverse: true }] },
    pb.ClientStateListResponse,
  );
  const restReverseState = (await rest('/state?address=1cf126&reverse&limit=2')).json;
  t.same(
    reverseState.entries.map((e: { address: string }) => e.address),
    restReverseState.data.map((e: { address: string }) => e.address),
  );
  t.equal(reverseState.paging.next, restReverseState.paging.next_position);
  t.equal(
    (await ask(MT.CLIENT_STATE_LIST_REQUEST, pb.ClientStateListRequest, { sorting: [{ keys: ['address'] }] }, pb.ClientStateListResponse)).status,
    pb.ClientStateListResponse.Status.INVALID_SORT,
  );

  // Batches and transactions: get and list.
  const batchGet = await ask(MT.CLIENT_BATCH_GET_REQUEST, pb.ClientBatchGetRequest, { batchId: ids[1] }, pb.ClientBatchGetResponse);
  t.equal(batchGet.batch.headerSignature, ids[1]);
  t.same(Buffer.from(pb.Batch.encode(batchGet.batch).finish()), Buffer.from(pb.Batch.encode(decodedBatches[1]).finish()), 'the batch as submitted');
  const txnGet = await ask(
    MT.CLIENT_TRANSACTION_GET_REQUEST,
    pb.ClientTransactionGetRequest,
    { transactionId: txnId },
    pb.ClientTransactionGetResponse,
  );
  t.equal(txnGet.transaction.headerSignature, txnId);
  t.equal(Buffer.from(txnGet.transaction.payload).toString('base64'), (await rest(`/transactions/${txnId}`)).json.data.payload);
  const batchListZ = await ask(MT.CLIENT_BATCH_LIST_REQUEST, pb.ClientBatchListRequest, { paging: { limit: 2 } }, pb.ClientBatchListResponse);
  const restBatches = (await rest('/batches?limit=2')).json;
  t.same(
    batchListZ.batches.map((b: { headerSignature: string }) => b.headerSignature),
    restBatches.data.map((b: { header_signature: string }) => b.header_signature),
  );
  t.equal(batchListZ.paging.next, restBatches.paging.next_position);
  const txnListZ = await ask(
    MT.CLIENT_TRANSACTION_LIST_REQUEST,
    pb.ClientTransactionListRequest,
    { paging: { limit: 3 } },
    pb.ClientTransactionListResponse,
  );
  const restTxns = (await rest('/transactions?limit=3')).json;
  t.same(
    txnListZ.transactions.map((x: { headerSignature: string }) => x.headerSignature),
    restTxns.data.map((x: { header_signature: string }) => x.header_signature),
  );
  t.equal(txnListZ.paging.next, restTxns.paging.next_position);
  const filtered = await ask(MT.CLIENT_BATCH_LIST_REQUEST, pb.ClientBatchListRequest, { batchIds: [ids[0]] }, pb.ClientBatchListResponse);
  t.same(
    filtered.batches.map((b: { headerSignature: string }) => b.headerSignature),
    [ids[0]],
  );
  t.equal(
    (await ask(MT.CLIENT_BATCH_GET_REQUEST, pb.ClientBatchGetRequest, { batchId: 'cd'.repeat(64) }, pb.ClientBatchGetResponse)).status,
    NO_RESOURCE,
  );

  // State: get and list at the head, as REST reads it.
  const stateGet = await ask(MT.CLIENT_STATE_GET_REQUEST, pb.ClientStateGetRequest, { address: intkeyAddress('a') }, pb.ClientStateGetResponse);
  t.equal(stateGet.status, OK);
  const restState = (await rest(`/state/${intkeyAddress('a')}`)).json;
  t.equal(Buffer.from(stateGet.value).toString('base64'), restState.data);
  t.equal(stateGet.stateRoot, restBlocks.data[0].header.state_root_hash);
  t.equal(
    (await ask(MT.CLIENT_STATE_GET_REQUEST, pb.ClientStateGetRequest, { address: intkeyAddress('zz') }, pb.ClientStateGetResponse)).status,
    NO_RESOURCE,
  );
  t.equal(
    (await ask(MT.CLIENT_STATE_GET_REQUEST, pb.ClientStateGetRequest, { address: 'xyz' }, pb.ClientStateGetResponse)).status,
    pb.ClientStateGetResponse.Status.INVALID_ADDRESS,
  );
  t.equal(
    (
      await ask(
        MT.CLIENT_STATE_GET_REQUEST,
        pb.ClientStateGetRequest,
        { address: intkeyAddress('a'), stateRoot: 'ab'.repeat(32) },
        pb.ClientStateGetResponse,
      )
    ).status,
    pb.ClientStateGetResponse.Status.NO_ROOT,
  );
  const stateList = await ask(
    MT.CLIENT_STATE_LIST_REQUEST,
    pb.ClientStateListRequest,
    { address: '1cf126', paging: { limit: 2 } },
    pb.ClientStateListResponse,
  );
  const restList = (await rest('/state?address=1cf126&limit=2')).json;
  t.same(
    stateList.entries.map((e: { address: string; data: Uint8Array }) => [e.address, Buffer.from(e.data).toString('base64')]),
    restList.data.map((e: { address: string; data: string }) => [e.address, e.data]),
  );
  t.equal(stateList.paging.next, restList.paging.next_position);
  const stateRest = await ask(
    MT.CLIENT_STATE_LIST_REQUEST,
    pb.ClientStateListRequest,
    { address: '1cf126', paging: { start: stateList.paging.next } },
    pb.ClientStateListResponse,
  );
  t.equal(stateRest.entries.length, 1, 'the third intkey entry');
  t.equal(
    (
      await ask(
        MT.CLIENT_STATE_LIST_REQUEST,
        pb.ClientStateListRequest,
        { address: '1cf126', paging: { start: intkeyAddress('zz') } },
        pb.ClientStateListResponse,
      )
    ).status,
    pb.ClientStateListResponse.Status.INVALID_PAGING,
  );

  // Refusals with upstream's statuses, and the edges of filtering and paging.
  const st = pb.ClientStateListResponse.Status;
  const lst = pb.ClientBlockListResponse.Status;
  const blocksWith = async (msg: object): Promise<any> =>
    ask(MT.CLIENT_BLOCK_LIST_REQUEST, pb.ClientBlockListRequest, msg, pb.ClientBlockListResponse);
  t.equal((await blocksWith({ headId: 'nope' })).status, lst.INVALID_ID, 'a malformed head');
  t.equal((await blocksWith({ blockIds: ['nope'] })).status, lst.INVALID_ID, 'a malformed id');
  t.equal((await blocksWith({ paging: { limit: -1 } })).status, lst.INVALID_PAGING, 'a negative limit');
  const oneBlock = await blocksWith({ blockIds: [headId], paging: { limit: 1 } });
  t.same(
    oneBlock.blocks.map((b: { headerSignature: string }) => b.headerSignature),
    [headId],
  );
  t.equal(oneBlock.paging?.limit ?? 0, 0, 'blocks filtered by id are not paged, as upstream');
  t.equal(
    (await ask(MT.CLIENT_BATCH_LIST_REQUEST, pb.ClientBatchListRequest, { batchIds: ['cd'.repeat(64)] }, pb.ClientBatchListResponse)).status,
    NO_RESOURCE,
  );
  const txnPage2 = await ask(
    MT.CLIENT_TRANSACTION_LIST_REQUEST,
    pb.ClientTransactionListRequest,
    { paging: { limit: 3, start: txnListZ.paging.next } },
    pb.ClientTransactionListResponse,
  );
  t.same(
    txnPage2.transactions.map((x: { headerSignature: string }) => x.headerSignature),
    (await rest(`/transactions?limit=3&start=${txnListZ.paging.next}`)).json.data.map((x: { header_signature: string }) => x.header_signature),
    'the second page, from the next marker',
  );
  t.equal(
    (await ask(MT.CLIENT_TRANSACTION_GET_REQUEST, pb.ClientTransactionGetRequest, { transactionId: 'x' }, pb.ClientTransactionGetResponse)).status,
    INVALID_ID,
  );
  t.equal(
    (await ask(MT.CLIENT_STATE_GET_REQUEST, pb.ClientStateGetRequest, { address: intkeyAddress('a'), stateRoot: 'nope' }, pb.ClientStateGetResponse))
      .status,
    pb.ClientStateGetResponse.Status.INVALID_ROOT,
  );
  const stateWith = async (msg: object): Promise<number> =>
    (await ask(MT.CLIENT_STATE_LIST_REQUEST, pb.ClientStateListRequest, msg, pb.ClientStateListResponse)).status;
  t.equal(await stateWith({ stateRoot: 'nope' }), st.INVALID_ROOT);
  t.equal(await stateWith({ address: 'xyz' }), st.INVALID_ADDRESS);
  t.equal(await stateWith({ paging: { limit: -5 } }), st.INVALID_PAGING);
  t.equal(await stateWith({ address: 'abcdef' }), NO_RESOURCE, 'nothing under the prefix');
  t.equal(await stateWith({ stateRoot: 'ab'.repeat(32) }), st.NO_ROOT);

  // Receipts, peers, status.
  const receipts = await ask(MT.CLIENT_RECEIPT_GET_REQUEST, pb.ClientReceiptGetRequest, { transactionIds: [txnId] }, pb.ClientReceiptGetResponse);
  const restReceipt = (await rest(`/receipts?id=${txnId}`)).json.data[0];
  t.equal(receipts.receipts[0].transactionId, txnId);
  t.same(
    receipts.receipts[0].stateChanges.map((s: { address: string }) => s.address),
    restReceipt.state_changes.map((s: { address: string }) => s.address),
  );
  t.equal(
    (await ask(MT.CLIENT_RECEIPT_GET_REQUEST, pb.ClientReceiptGetRequest, { transactionIds: ['ef'.repeat(64)] }, pb.ClientReceiptGetResponse)).status,
    NO_RESOURCE,
  );
  t.equal(
    (await ask(MT.CLIENT_RECEIPT_GET_REQUEST, pb.ClientReceiptGetRequest, { transactionIds: ['x'] }, pb.ClientReceiptGetResponse)).status,
    INVALID_ID,
  );
  const peers = await ask(MT.CLIENT_PEERS_GET_REQUEST, pb.ClientPeersGetRequest, {}, pb.ClientPeersGetResponse);
  t.same(peers.peers, (await rest('/peers')).json.data);
  const status = await ask(MT.CLIENT_STATUS_GET_REQUEST, pb.ClientStatusGetRequest, {}, pb.ClientStatusGetResponse);
  const restStatus = (await rest('/status')).json.data;
  t.equal(status.status, OK);
  t.equal(status.endpoint, restStatus.endpoint);

  // Not served (CLIENT_STATE_CURRENT, obsolete upstream) and malformed content: answered NETWORK_ACK ERROR.
  const current = await c.request(MT.CLIENT_STATE_CURRENT_REQUEST, Buffer.alloc(0));
  t.equal(current.type, MT.NETWORK_ACK);
  // An answer sent as if it were a request is not answered: the next request's answer comes first.
  await c.sendRaw(
    Buffer.from(pb.Message.encode({ messageType: MT.CLIENT_BATCH_SUBMIT_RESPONSE, correlationId: 'stray', content: Buffer.alloc(0) }).finish()),
  );
  const bad = await c.request(MT.CLIENT_BLOCK_LIST_REQUEST, Buffer.from([0xff, 0xff, 0xff]));
  t.equal(c.unmatched, 0, 'nothing came back for the stray answer');
  t.equal(bad.type, MT.NETWORK_ACK);
  t.equal(pb.NetworkAcknowledgement.decode(bad.content).status, 2);
});
