/**
 * The validator's client requests on the component endpoint (what upstream's REST API
 * process and Grid's Sawtooth connection send), answered from the query service the REST
 * gateway reads, with upstream's status codes and paging (research sawtooth.md §1.6):
 * batch submit (QUEUE_FULL on back-pressure, as 429 on REST) and status (with wait), block /
 * batch / transaction get and list, state get and list, receipts, peers, status.
 *
 * A status request with `wait` holds a wait only while one of its batches is PENDING, for
 * at most 300 s, and within bounds (WaitLimits): so many per client and so many in all. Past
 * either, a request with `wait` is answered at once with INTERNAL_ERROR (the response has no message
 * field; upstream's REST API turns it into a 500 and its SDK clients into an error), and the
 * node logs why, rather than holding what one socket asks without end.
 *
 * Blocks, batches, transactions and receipts go out as stored: an embedded message is the
 * same bytes on the wire as a `bytes` field (the Get/List response messages of validator.proto).
 */
import type { Config } from '../config.js';
import type { ChainBlock, ChainReader } from '../ledger-api/chain.js';
import { decodeBlock } from '../ledger-api/json.js';
import { ADDRESS_PREFIX_RE } from '../ledger-api/params.js';
import { isHexId } from '../codec/hex.js';
import { Batch, encode, Transaction } from '../proto/index.js';
import { CorruptStateError, UnknownRootError } from '../state/merkle.js';
import * as P from './proto.js';
import { paced } from '../http/wait.js';
import { log } from '../log.js';

/** Statuses shared by the get and list responses (their enums agree on these numbers). */
const S = { OK: 1, INTERNAL_ERROR: 2, NOT_READY: 3, NO_ROOT: 4, NO_RESOURCE: 5, INVALID_PAGING: 6, INVALID_SORT: 7, INVALID_ID: 8 } as const;
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
/** Batch ids one status request may name (the REST gateway's URL limit comes first there). */
const MAX_IDS = 1000;
/** Longest wait a status request may ask (seconds). */
const MAX_WAIT_S = 300;

export interface Answer {
  kind: number;
  type: typeof P.Envelope;
  msg: object;
}

const K = () => P.Kind;
const answer = (kind: number, type: typeof P.Envelope, msg: object): Answer => ({ kind, type, msg });

interface Ctx {
  chain: ChainReader;
  config: Pick<Config, 'peers' | 'endpoint' | 'maxBodyBytes'>;
  /** The client (hex routing id), and the bounds on the waits clients hold. */
  peer: string;
  waits: WaitLimits;
}

/** A refused wait is logged at most this often (ms), with the number refused since: a flood makes one line, not one per request. */
const REFUSAL_LOG_MS = 10_000;

/**
 * The batch-status waits the component endpoint's clients hold: at most `perClient` for one
 * client and `total` for all of them (--component-waits-per-client, --component-waits).
 */
export class WaitLimits {
  readonly #byPeer = new Map<string, number>();
  #held = 0;
  #refused = 0;
  #loggedAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly perClient: number,
    readonly total: number,
  ) {}

  /** A slot for one more wait of `peer`: the function that gives it back (call it once), or null past a bound (logged). */
  take(peer: string): (() => void) | null {
    const mine = this.#byPeer.get(peer) ?? 0;
    const over =
      mine >= this.perClient
        ? `client ${peer.slice(0, 12)} holds ${mine} (--component-waits-per-client)`
        : this.#held >= this.total
          ? `clients hold ${this.#held} (--component-waits)`
          : null;
    if (over) {
      this.#refused++;
      const now = Date.now();
      if (now - this.#loggedAt >= REFUSAL_LOG_MS) {
        log.warn(`component endpoint: ${this.#refused} batch-status wait(s) refused with INTERNAL_ERROR: ${over}`);
        this.#loggedAt = now;
        this.#refused = 0;
      }
      return null;
    }
    this.#byPeer.set(peer, mine + 1);
    this.#held++;
    return () => {
      this.#held--;
      const left = (this.#byPeer.get(peer) ?? 1) - 1;
      if (left > 0) this.#byPeer.set(peer, left);
      else this.#byPeer.delete(peer);
    };
  }
}

/** The answer to a client request, or undefined for a type not served here. */
export async function clientRequest(c: Ctx, type: number, content: Uint8Array): Promise<Answer | undefined> {
  const k = K();
  const { chain } = c;
  switch (type) {
    case k.CLIENT_BATCH_SUBMIT_REQUEST: {
      // ClientBatchSubmitRequest{repeated Batch batches = 1} is a BatchList on the wire;
      // larger than a POST /batches body may be (413 there), it is refused unread.
      if (content.length > c.config.maxBodyBytes) return answer(k.CLIENT_BATCH_SUBMIT_RESPONSE, P.BatchSubmitResponse, { status: 3 });
      const r = await chain.ledger.submit(content);
      const status = r.ok ? 1 : r.code === 'QUEUE_FULL' ? 4 : r.code === 'UNAVAILABLE' ? 2 : 3;
      return answer(k.CLIENT_BATCH_SUBMIT_RESPONSE, P.BatchSubmitResponse, { status });
    }
    case k.CLIENT_BATCH_STATUS_REQUEST:
      return batchStatus(c, P.BatchStatusRequest.decode(content) as unknown as { batchIds: string[]; wait: boolean; timeout: number });
    case k.CLIENT_BLOCK_GET_BY_ID_REQUEST:
      return blockGet(
        chain,
        idOf(content, (id) => chain.byId(id)),
      );
    case k.CLIENT_BLOCK_GET_BY_NUM_REQUEST: {
      const num = Number((P.BlockGetByNumRequest.decode(content) as unknown as { blockNum: { toString(): string } }).blockNum.toString());
      return blockGet(chain, num <= chain.current().num ? (chain.byNum(num) ?? S.NO_RESOURCE) : S.NO_RESOURCE);
    }
    case k.CLIENT_BLOCK_GET_BY_BATCH_ID_REQUEST:
      return blockGet(
        chain,
        idOf(content, (id) => at(chain, chain.ledger.query.batchPos(id)?.[0])),
      );
    case k.CLIENT_BLOCK_GET_BY_TRANSACTION_ID_REQUEST:
      return blockGet(
        chain,
        idOf(content, (id) => at(chain, chain.ledger.query.txnPos(id)?.[0])),
      );
    case k.CLIENT_BATCH_GET_REQUEST: {
      const found = idOf(content, (id) => batchBytes(c, id));
      return answer(k.CLIENT_BATCH_GET_RESPONSE, P.GetResponse, typeof found === 'number' ? { status: found } : { status: S.OK, item: found });
    }
    case k.CLIENT_TRANSACTION_GET_REQUEST: {
      const found = idOf(content, (id) => txnBytes(c, id));
      return answer(k.CLIENT_TRANSACTION_GET_RESPONSE, P.GetResponse, typeof found === 'number' ? { status: found } : { status: S.OK, item: found });
    }
    case k.CLIENT_BLOCK_LIST_REQUEST:
      return list(c, content, k.CLIENT_BLOCK_LIST_RESPONSE, 'blocks');
    case k.CLIENT_BATCH_LIST_REQUEST:
      return list(c, content, k.CLIENT_BATCH_LIST_RESPONSE, 'batches');
    case k.CLIENT_TRANSACTION_LIST_REQUEST:
      return list(c, content, k.CLIENT_TRANSACTION_LIST_RESPONSE, 'transactions');
    case k.CLIENT_STATE_GET_REQUEST:
      return stateGet(c, P.StateGetRequest2.decode(content) as unknown as { stateRoot: string; address: string });
    case k.CLIENT_STATE_LIST_REQUEST:
      return stateList(c, P.StateListRequest.decode(content) as unknown as StateListMsg);
    case k.CLIENT_RECEIPT_GET_REQUEST: {
      const ids = (P.ReceiptGetRequest.decode(content) as unknown as { transactionIds: string[] }).transactionIds;
      if (ids.length === 0 || ids.length > MAX_IDS || !ids.every(isHexId)) {
        return answer(k.CLIENT_RECEIPT_GET_RESPONSE, P.ReceiptGetResponse, { status: S.INVALID_ID });
      }
      const receipts = ids.map((id) => chain.ledger.query.receipt(id));
      if (receipts.some((r) => r === undefined)) return answer(k.CLIENT_RECEIPT_GET_RESPONSE, P.ReceiptGetResponse, { status: S.NO_RESOURCE });
      return answer(k.CLIENT_RECEIPT_GET_RESPONSE, P.ReceiptGetResponse, { status: S.OK, receipts });
    }
    case k.CLIENT_PEERS_GET_REQUEST:
      return answer(k.CLIENT_PEERS_GET_RESPONSE, P.PeersGetResponse, { status: S.OK, peers: c.config.peers });
    case k.CLIENT_STATUS_GET_REQUEST:
      return answer(k.CLIENT_STATUS_GET_RESPONSE, P.StatusGetResponse, {
        status: chain.ledger.fault === null ? S.OK : 2,
        endpoint: c.config.endpoint,
        peers: [...c.config.peers].sort().map((endpoint) => ({ endpoint })),
      });
    default:
      return undefined;
  }
}

/** The id of an IdRequest looked up; INVALID_ID for a malformed one, NO_RESOURCE when unknown. */
function idOf<T>(content: Uint8Array, find: (id: string) => T | undefined): T | number {
  const { id } = P.IdRequest.decode(content) as unknown as { id: string };
  if (!isHexId(id)) return S.INVALID_ID;
  return find(id) ?? S.NO_RESOURCE;
}

function at(chain: ChainReader, num: number | undefined): ChainBlock | undefined {
  return num === undefined ? undefined : chain.byNum(num);
}

function blockGet(chain: ChainReader, found: ChainBlock | number): Answer {
  if (typeof found === 'number') return answer(K().CLIENT_BLOCK_GET_RESPONSE, P.GetResponse, { status: found });
  return answer(K().CLIENT_BLOCK_GET_RESPONSE, P.GetResponse, { status: S.OK, item: blockBytes(chain, found.id) });
}

/** A block as stored (the serialized Block). */
function blockBytes(chain: ChainReader, id: string): Uint8Array {
  return chain.ledger.query.block(id) ?? new Uint8Array(0);
}

function batchBytes(c: Ctx, id: string): Uint8Array | undefined {
  const pos = c.chain.ledger.query.batchPos(id);
  const raw = pos && c.chain.ledger.query.block(c.chain.byNum(pos[0])?.id ?? '');
  const batch = raw && decodeBlock(raw).batches[pos[1]];
  return batch && encode(Batch, batch);
}

function txnBytes(c: Ctx, id: string): Uint8Array | undefined {
  const pos = c.chain.ledger.query.txnPos(id);
  const raw = pos && c.chain.ledger.query.block(c.chain.byNum(pos[0])?.id ?? '');
  const txn = raw && decodeBlock(raw).batches[pos[1]]?.transactions[pos[2]];
  return txn && encode(Transaction, txn);
}

async function batchStatus(c: Ctx, m: { batchIds: string[]; wait: boolean; timeout: number }): Promise<Answer> {
  const k = K();
  if (m.batchIds.length === 0) return answer(k.CLIENT_BATCH_STATUS_RESPONSE, P.BatchStatusResponse, { status: S.NO_RESOURCE });
  if (m.batchIds.length > MAX_IDS || !m.batchIds.every(isHexId)) {
    return answer(k.CLIENT_BATCH_STATUS_RESPONSE, P.BatchStatusResponse, { status: S.INVALID_ID });
  }
  const ledger = c.chain.ledger;
  if (m.wait) {
    // Past a bound the request is refused before anything is read: a flood of them costs
    // little. A wait holds its slot only while a batch is PENDING (the component endpoint is
    // off on cluster members, where an UNKNOWN batch could be waited for in the log).
    const release = c.waits.take(c.peer);
    if (!release) return answer(k.CLIENT_BATCH_STATUS_RESPONSE, P.BatchStatusResponse, { status: S.INTERNAL_ERROR });
    try {
      // Paced: a block that settles what thousands of waits wait for answers them a slice per turn.
      if (m.batchIds.some((id) => ledger.status(id).status === 'PENDING'))
        await paced(ledger.waitFor(m.batchIds, Math.min(m.timeout || MAX_WAIT_S, MAX_WAIT_S) * 1000));
    } finally {
      release();
    }
  }
  const codes = { COMMITTED: 1, INVALID: 2, PENDING: 3, UNKNOWN: 4 } as const;
  const batchStatuses = m.batchIds.map((id) => {
    const s = ledger.status(id);
    return {
      batchId: id,
      status: codes[s.status],
      invalidTransactions: s.invalid_transactions.map((t) => ({
        transactionId: t.id,
        message: t.message,
        extendedData: Buffer.from(t.extended_data, 'base64'),
      })),
    };
  });
  return answer(k.CLIENT_BATCH_STATUS_RESPONSE, P.BatchStatusResponse, { status: S.OK, batchStatuses });
}

interface SortMsg {
  keys: string[];
  reverse: boolean;
}

interface ListMsg {
  headId: string;
  ids: string[];
  paging: { start: string; limit: number } | null;
  sorting: SortMsg[];
}

/** Whether the list is reversed; undefined for sort keys upstream does not accept (INVALID_SORT). */
function reversed(sorting: SortMsg[], key: string): boolean | undefined {
  if (sorting.some((s) => s.keys.length !== 1 || s.keys[0] !== key)) return undefined;
  return sorting[0]?.reverse ?? false;
}

const hexNum = (n: number): string => `0x${n.toString(16).padStart(16, '0')}`;
const effectiveLimit = (l: number | undefined): number => Math.min(l ?? 0, MAX_LIMIT) || DEFAULT_LIMIT;

/**
 * Blocks (from the head down), batches or transactions (newest block first, block order
 * within one), filtered by ids when given, paged from the `start` marker: a hex block number
 * for blocks, an id otherwise.
 */
function list(c: Ctx, content: Uint8Array, kind: number, what: 'blocks' | 'batches' | 'transactions'): Answer {
  const m = P.ListRequest.decode(content) as unknown as ListMsg;
  const { chain } = c;
  const fail = (status: number): Answer => answer(kind, P.ListResponse, { status });
  if (m.headId !== '' && !isHexId(m.headId)) return fail(S.INVALID_ID);
  if (m.ids.some((id) => !isHexId(id))) return fail(S.INVALID_ID);
  const head = m.headId === '' ? chain.byNum(chain.current().num) : chain.byId(m.headId);
  if (!head) return fail(S.NO_ROOT);
  const wanted = m.ids.length ? new Set(m.ids) : null;
  const limit = effectiveLimit(m.paging?.limit);
  const start = m.paging?.start ?? '';
  if (m.paging && m.paging.limit < 0) return fail(S.INVALID_PAGING);
  const items: Uint8Array[] = [];
  let first = '';
  let next = '';
  let started = start === '';
  if (what === 'blocks' && start !== '' && !/^0x[0-9a-f]{1,16}$/i.test(start)) return fail(S.INVALID_PAGING);
  const reverse = reversed(m.sorting, what === 'blocks' ? 'block_num' : 'default');
  if (reverse === undefined) return fail(S.INVALID_SORT);
  // Walk from the head down (reversed: from genesis up); stop once the page is full and the next marker is known.
  for (let i = 0; i <= head.num && next === ''; i++) {
    const num = reverse ? i : head.num - i;
    const block = chain.byNum(num);
    if (!block) return fail(S.INTERNAL_ERROR);
    const entries: Array<{ id: string; marker: string; bytes: () => Uint8Array }> = [];
    if (what === 'blocks') {
      entries.push({ id: block.id, marker: hexNum(num), bytes: () => blockBytes(chain, block.id) });
    } else {
      const decoded = decodeBlock(chain.ledger.query.block(block.id) ?? new Uint8Array(0));
      for (const b of decoded.batches) {
        if (what === 'batches') entries.push({ id: b.headerSignature, marker: b.headerSignature, bytes: () => encode(Batch, b) });
        else for (const t of b.transactions) entries.push({ id: t.headerSignature, marker: t.headerSignature, bytes: () => encode(Transaction, t) });
      }
      if (reverse) entries.reverse();
    }
    for (const e of entries) {
      if (wanted && !wanted.has(e.id)) continue;
      if (!started) {
        if (what === 'blocks' ? Number.parseInt(e.marker, 16) !== Number.parseInt(start, 16) : e.marker !== start) continue;
        started = true;
      }
      if (items.length === limit) {
        next = e.marker;
        break;
      }
      if (items.length === 0) first = e.marker;
      items.push(e.bytes());
    }
  }
  if (!started) return fail(S.INVALID_PAGING);
  if (items.length === 0) return answer(kind, P.ListResponse, { status: S.NO_RESOURCE, headId: head.id });
  // Blocks filtered by ids are not paged upstream (an empty paging answer).
  const paging = what === 'blocks' && wanted ? {} : { start: first, limit, next };
  return answer(kind, P.ListResponse, { status: S.OK, items, headId: head.id, paging });
}

function resolveRoot(c: Ctx, root: string): string | number {
  if (root === '') return c.chain.current().stateRoot;
  return /^[0-9a-f]{64}$/.test(root) ? root : -1;
}

function stateGet(c: Ctx, m: { stateRoot: string; address: string }): Answer {
  const kind = K().CLIENT_STATE_GET_RESPONSE;
  // ClientStateGetResponse: INVALID_ADDRESS = 6, INVALID_ROOT = 7.
  const root = resolveRoot(c, m.stateRoot);
  if (typeof root === 'number') return answer(kind, P.StateGetResponse2, { status: 7 });
  if (!/^[0-9a-f]{70}$/.test(m.address)) return answer(kind, P.StateGetResponse2, { status: 6 });
  return readState(c, kind, P.StateGetResponse2, () => {
    const value = c.chain.ledger.query.state.get(root, m.address);
    return value === undefined ? { status: S.NO_RESOURCE, stateRoot: root } : { status: S.OK, value, stateRoot: root };
  });
}

interface StateListMsg {
  stateRoot: string;
  address: string;
  paging: { start: string; limit: number } | null;
  sorting: SortMsg[];
}

function stateList(c: Ctx, m: StateListMsg): Answer {
  const kind = K().CLIENT_STATE_LIST_RESPONSE;
  // ClientStateListResponse: INVALID_ADDRESS = 8, INVALID_ROOT = 9.
  const root = resolveRoot(c, m.stateRoot);
  if (typeof root === 'number') return answer(kind, P.StateListResponse, { status: 9 });
  if (!ADDRESS_PREFIX_RE.test(m.address)) return answer(kind, P.StateListResponse, { status: 8 });
  if (m.paging && m.paging.limit < 0) return answer(kind, P.StateListResponse, { status: S.INVALID_PAGING });
  const reverse = reversed(m.sorting, 'default');
  if (reverse === undefined) return answer(kind, P.StateListResponse, { status: S.INVALID_SORT });
  const limit = effectiveLimit(m.paging?.limit);
  const start = m.paging?.start ?? '';
  return readState(c, kind, P.StateListResponse, () => {
    const it = c.chain.ledger.query.state.entries(root, m.address, start ? { start, reverse } : { reverse });
    const entries: Array<{ address: string; data: Uint8Array }> = [];
    let next = '';
    for (const e of it) {
      if (entries.length === 0 && start !== '' && e.address !== start) return { status: S.INVALID_PAGING };
      if (entries.length === limit) {
        next = e.address;
        break;
      }
      entries.push({ address: e.address, data: e.value });
    }
    if (entries.length === 0) return { status: start === '' ? S.NO_RESOURCE : S.INVALID_PAGING, stateRoot: root };
    return { status: S.OK, entries, stateRoot: root, paging: { start: entries[0]?.address ?? '', limit, next } };
  });
}

/** A state read: an unknown root is NO_ROOT; a failed integrity check marks the ledger faulty, INTERNAL_ERROR. */
function readState(c: Ctx, kind: number, type: typeof P.Envelope, f: () => object): Answer {
  try {
    return answer(kind, type, f());
  } catch (err) {
    if (err instanceof UnknownRootError) return answer(kind, type, { status: S.NO_ROOT });
    if (err instanceof CorruptStateError) {
      c.chain.ledger.markFaulty(`state read failed its integrity check: ${err.message}`);
      return answer(kind, type, { status: S.INTERNAL_ERROR });
    }
    throw err;
  }
}
