/**
 * Executes the batches of one candidate block in order against a state snapshot.
 * Each transaction sees the writes of the transactions before it; a batch with a
 * failing transaction is discarded whole and leaves no trace in the block's state.
 */
import { StateChangeType, TransactionHeader, decode, type BatchMsg, type TransactionHeaderMsg } from '../proto/index.js';
import { findFamily } from '../families/index.js';
import type { FamilyLookup } from './catalog.js';
import { InvalidTransaction, type EventAttribute, type TxnContext, type TxnInfo } from '../families/types.js';
import { sha512Hex } from '../crypto/secp256k1.js';

export interface StateReader {
  get(address: string): Uint8Array | undefined;
}

export interface ReceiptEvent {
  eventType: string;
  attributes: EventAttribute[];
  data: Uint8Array;
}

export interface Receipt {
  transactionId: string;
  /** SET changes first, then DELETEs, as the validator lists them. */
  stateChanges: Array<{ address: string; value: Uint8Array; type: number }>;
  events: ReceiptEvent[];
  data: Uint8Array[];
}

export interface InvalidTxn {
  id: string;
  message: string;
  extendedData: Uint8Array;
}

export type BatchOutcome = { ok: true; receipts: Receipt[] } | { ok: false; invalid: InvalidTxn };

/**
 * Families executed outside the engine, by transaction processors on the component
 * endpoint (src/component). Only batches holding such a family take the async path.
 */
export interface ExternalFamilies {
  /**
   * For one block on `base`: where a transaction of a family runs. 'native' (the engine's
   * own family), 'external' (a processor serves it), 'unserved' (no processor serves it
   * yet: the batch waits; `{ unserved }` says why, when there is more to say than the
   * family), or a message that makes the transaction invalid.
   */
  blockRoutes(base: StateReader): FamilyRoute;
  /**
   * Runs the transaction on a processor. Each attempt works on a fresh context from
   * `context()`; resolves with the context of the attempt that answered OK. Rejects with
   * InvalidTransaction, or with ExternalUnavailable when the batch has to wait.
   * `headerBytes` are the transaction's header as signed.
   */
  process<C extends TxnContext>(txn: TxnInfo, headerBytes: Uint8Array, context: () => C): Promise<C>;
}

/**
 * An external executor: families run outside the engine (the component endpoint's
 * transaction processors, src/component/server.ts, implements it). It serves an endpoint
 * of its own, whose clients' traffic the committer relays (ClientTraffic, protocol.ts).
 * Its module registers a maker under its name (src/ledger/plugins.ts).
 */
export interface ExternalExecutor extends ExternalFamilies {
  /** Starts serving; resolves with its endpoint's address. */
  start(): Promise<string>;
  /** An envelope for a client of its endpoint (hex routing id). */
  sendTo(peer: string, body: Uint8Array): void;
  close(): Promise<void>;
}

export type FamilyRoute = (name: string, version: string, native: boolean) => 'native' | 'external' | 'unserved' | Unserved | { invalid: string };

/** No processor could finish the transaction now; its batch waits (see ExternalFamilies). */
export class ExternalUnavailable extends Error {}

/** A batch of an external family no processor serves yet. */
export type Unserved = { unserved: string };

type Writes = Map<string, Uint8Array | null>;

const covered = (address: string, prefixes: string[]): boolean => {
  for (const p of prefixes) if (address.startsWith(p)) return true;
  return false;
};

/**
 * The transaction headers of a batch, or the batch's INVALID outcome when one does not decode
 * (a batch not verified before execution: see readBatch in block-builder.ts).
 */
function decodeHeaders(batch: BatchMsg): TransactionHeaderMsg[] | BatchOutcome {
  const headers: TransactionHeaderMsg[] = [];
  for (const t of batch.transactions) {
    try {
      headers.push(decode(TransactionHeader, t.header));
    } catch (err) {
      const message = `The transaction header does not decode (${err instanceof Error ? err.message : String(err)})`;
      return { ok: false, invalid: { id: t.headerSignature, message, extendedData: new Uint8Array(0) } };
    }
  }
  return headers;
}

class Context implements TxnContext {
  readonly writes: Writes = new Map();
  readonly events: ReceiptEvent[] = [];
  readonly data: Uint8Array[] = [];
  constructor(
    private readonly header: TransactionHeaderMsg,
    private readonly read: (address: string) => Uint8Array | undefined,
  ) {}

  get(address: string): Uint8Array | undefined {
    if (!covered(address, this.header.inputs)) {
      throw new InvalidTransaction(`Tried to get unauthorized address ${address}: it is not in the transaction's inputs`);
    }
    const w = this.writes.get(address);
    if (w !== undefined) return w ?? undefined;
    return this.read(address);
  }

  set(address: string, value: Uint8Array): void {
    if (!covered(address, this.header.outputs)) {
      throw new InvalidTransaction(`Tried to set unauthorized address ${address}: it is not in the transaction's outputs`);
    }
    if (!/^[0-9a-f]{70}$/.test(address)) throw new InvalidTransaction(`Address ${address} is not 70 hex characters`);
    this.writes.set(address, value);
  }

  delete(address: string): void {
    if (!covered(address, this.header.outputs)) {
      throw new InvalidTransaction(`Tried to delete unauthorized address ${address}: it is not in the transaction's outputs`);
    }
    const current = this.writes.has(address) ? this.writes.get(address) : this.read(address);
    if (current === undefined && !this.writes.has(address)) return;
    this.writes.set(address, null);
  }

  addEvent(eventType: string, attributes: EventAttribute[], data?: Uint8Array): void {
    this.events.push({ eventType, attributes, data: data ?? new Uint8Array(0) });
  }

  addReceiptData(data: Uint8Array): void {
    this.data.push(data);
  }
}

export class BlockExecutor {
  /** The block's accumulated writes (address → value, null = deleted). */
  readonly writes: Writes = new Map();
  /** Transaction ids executed in this block so far (for dependencies and duplicates). */
  readonly txnIds = new Set<string>();

  readonly #route: FamilyRoute | undefined;

  constructor(
    private readonly base: StateReader,
    /** The families this ledger executes (an unknown one makes its transaction invalid). */
    private readonly families: FamilyLookup = findFamily,
    /** Families run by transaction processors; absent, every family is native. */
    private readonly external?: ExternalFamilies,
  ) {
    this.#route = external?.blockRoutes(base);
  }

  #read(address: string, batch: Writes): Uint8Array | undefined {
    const b = batch.get(address);
    if (b !== undefined) return b ?? undefined;
    const w = this.writes.get(address);
    if (w !== undefined) return w ?? undefined;
    return this.base.get(address);
  }

  /**
   * Executes a batch. `isCommitted(txnId)` tells whether a transaction id is already on
   * the chain. Returns 'wait' when a dependency is not yet satisfied.
   */
  executeBatch(batch: BatchMsg, isCommitted: (txnId: string) => boolean): BatchOutcome | 'wait' | 'async' | Unserved {
    const headers = decodeHeaders(batch);
    if (!Array.isArray(headers)) return headers;
    const external: boolean[] = [];
    const checked = this.#check(batch, headers, isCommitted, external);
    if (checked !== null) return checked;
    const steps = this.#apply(batch, headers, external);
    const step = steps.next();
    // Without external transactions the steps never yield: the native path stays synchronous.
    if (!step.done) throw new Error('an external transaction reached the synchronous path');
    return step.value;
  }

  /**
   * Executes a batch that executeBatch() answered 'async' for: its external transactions run
   * on processors, in order, each seeing the writes of the transactions before it.
   */
  async executeBatchAsync(batch: BatchMsg, isCommitted: (txnId: string) => boolean): Promise<BatchOutcome | 'wait' | Unserved> {
    const headers = decodeHeaders(batch);
    if (!Array.isArray(headers)) return headers;
    const external: boolean[] = [];
    const checked = this.#check(batch, headers, isCommitted, external);
    if (checked !== null && checked !== 'async') return checked;
    const steps = this.#apply(batch, headers, external);
    let step = steps.next();
    while (!step.done) {
      const { txn, headerBytes, context } = step.value;
      let result: Context | Error;
      try {
        result = await this.external!.process(txn, headerBytes, context);
      } catch (err) {
        if (err instanceof ExternalUnavailable) return { unserved: err.message };
        result = err instanceof Error ? err : new Error(String(err));
      }
      step = steps.next(result);
    }
    return step.value;
  }

  /**
   * Checks before any execution: duplicates, dependencies, payload hashes, and where each
   * family runs (`external[i]` is set for the transactions a processor runs).
   */
  #check(
    batch: BatchMsg,
    headers: TransactionHeaderMsg[],
    isCommitted: (txnId: string) => boolean,
    external: boolean[],
  ): BatchOutcome | 'wait' | 'async' | Unserved | null {
    const seen = new Set<string>();
    for (let i = 0; i < batch.transactions.length; i++) {
      const id = batch.transactions[i]!.headerSignature;
      if (this.txnIds.has(id) || isCommitted(id)) {
        return { ok: false, invalid: { id, message: `Transaction ${id} is already committed`, extendedData: new Uint8Array(0) } };
      }
      for (const dep of headers[i]!.dependencies) {
        if (!seen.has(dep) && !this.txnIds.has(dep) && !isCommitted(dep)) return 'wait';
      }
      seen.add(id);
    }
    // The payload is checked again here, not only at submission: a batch is executed as
    // stored, and one damaged since (or handed in without verification) must never be sealed.
    for (let i = 0; i < batch.transactions.length; i++) {
      const t = batch.transactions[i]!;
      if (sha512Hex(t.payload) !== headers[i]!.payloadSha512) {
        return {
          ok: false,
          invalid: { id: t.headerSignature, message: 'payload_sha512 does not match the payload', extendedData: new Uint8Array(0) },
        };
      }
    }
    if (!this.#route) return null;
    let any = false;
    for (let i = 0; i < headers.length; i++) {
      const h = headers[i]!;
      const route = this.#route(h.familyName, h.familyVersion, this.families(h.familyName, h.familyVersion) !== undefined);
      external[i] = route === 'external';
      if (route === 'external') any = true;
      else if (route === 'unserved') return { unserved: `${h.familyName} ${h.familyVersion}` };
      else if (route !== 'native' && 'unserved' in route) return route;
      else if (route !== 'native') {
        return { ok: false, invalid: { id: batch.transactions[i]!.headerSignature, message: route.invalid, extendedData: new Uint8Array(0) } };
      }
    }
    return any ? 'async' : null;
  }

  /**
   * Applies the transactions in order. A transaction of an external family is yielded to
   * the caller, which runs it and sends back the context that holds its result (or the
   * error it ended with); native ones are applied here.
   */
  *#apply(
    batch: BatchMsg,
    headers: TransactionHeaderMsg[],
    external: boolean[],
  ): Generator<{ txn: TxnInfo; headerBytes: Uint8Array; context: () => Context }, BatchOutcome, Context | Error> {
    const batchWrites: Writes = new Map();
    const receipts: Receipt[] = [];
    for (let i = 0; i < batch.transactions.length; i++) {
      const t = batch.transactions[i]!;
      const header = headers[i]!;
      const family = this.families(header.familyName, header.familyVersion);
      let ctx = new Context(header, (a) => this.#read(a, batchWrites));
      try {
        const txn = { id: t.headerSignature, header, payload: t.payload };
        if (external[i] === true) {
          const result = yield { txn, headerBytes: t.header, context: () => new Context(header, (a) => this.#read(a, batchWrites)) };
          if (result instanceof Error) throw result;
          ctx = result;
        } else {
          if (!family) throw new InvalidTransaction(`Unknown transaction family ${header.familyName} ${header.familyVersion}`);
          family.apply(txn, ctx);
        }
      } catch (err) {
        if (err instanceof InvalidTransaction) {
          return {
            ok: false,
            invalid: { id: t.headerSignature, message: err.message, extendedData: err.extendedData ?? new Uint8Array(0) },
          };
        }
        const message = err instanceof Error ? err.message : String(err);
        return { ok: false, invalid: { id: t.headerSignature, message: `Internal error: ${message}`, extendedData: new Uint8Array(0) } };
      }
      const sets: Receipt['stateChanges'] = [];
      const deletes: Receipt['stateChanges'] = [];
      for (const [address, value] of ctx.writes) {
        batchWrites.set(address, value);
        if (value) sets.push({ address, value, type: StateChangeType.SET });
        else deletes.push({ address, value: new Uint8Array(0), type: StateChangeType.DELETE });
      }
      receipts.push({ transactionId: t.headerSignature, stateChanges: [...sets, ...deletes], events: ctx.events, data: ctx.data });
    }
    for (const [a, v] of batchWrites) this.writes.set(a, v);
    for (const t of batch.transactions) this.txnIds.add(t.headerSignature);
    return { ok: true, receipts };
  }
}
