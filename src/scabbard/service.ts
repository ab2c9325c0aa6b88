/**
 * One state service of a circuit (scabbard, research circuits.md §3): a ledger instance of
 * the engine (block builder + chain writer over its own prefixed stores, raw Merkle leaves,
 * Sabre only), fed by upstream's version 2 intake (the coordinator proposes, the others
 * forward to it) and agreed round by round with the two-phase commit.
 *
 * Where it does better than upstream (docs/circuits.md): a round carries up to `roundMax`
 * batches; an accepted batch is in LMDB before the 202 and is proposed until it settles;
 * statuses are stored; a rejected or timed-out round is proposed again; a member that is
 * behind fetches the committed rounds it lacks from a peer and re-executes them.
 * Every commit (state, head, receipts, statuses, intake removal, round log, read model) is
 * one LMDB transaction, stamped with the round's time as the coordinator proposed it.
 */
import type { Database, RootDatabase } from 'lmdb';
import { Batch, decode as decodePb } from '../proto/index.js';
import type { Signer } from '../crypto/secp256k1.js';
import { sha256 } from '../crypto/secp256k1.js';
import { log } from '../log.js';
import { BlockBuilder, type BuildEntry, type BuiltBlock } from '../ledger/block-builder.js';
import { ChainWriter } from '../ledger/chain-writer.js';
import type { StatusEntry } from '../ledger/query.js';
import type { ProjectorEntry } from '../ledger/catalog.js';
import { EMPTY_ROOT, MerkleTree } from '../state/merkle.js';
import type { StateStore, StateUpdate } from '../state/state-store.js';
import { HEAD_KEY, openLedgerStores, type ChainHead, type InvalidRecord, type LedgerStores } from '../store/ledger-stores.js';
import { scabbardDbNames } from '../store/names.js';
import { ConsensusMessage, TwoPhase, TwoPhaseMessage } from '../circuits/proto.js';
import type { VerifyResult } from '../ledger/verify.js';
import { ADMIN_SETTING_ADDRESS, SCABBARD_FAMILY_NAMES, adminSettingValue, scabbardFamilies } from './sabre.js';
import { openStore } from '../store/checksum.js';
import {
  BatchListMsg,
  MsgType,
  Proposal,
  ScabbardMessage,
  decode,
  encode,
  type ProposalMsg,
  type RoundRecordMsg,
  type ScabbardMsg,
} from './proto.js';

export interface ServiceArgs {
  peers: string[];
  adminKeys: string[];
  coordinatorTimeoutMs: number;
  version: string;
}

/** A JSON array string or a comma list (upstream accepts both). */
function list(v: string | undefined): string[] {
  if (v === undefined || v.trim() === '') return [];
  const s = v.trim();
  if (s.startsWith('[')) {
    try {
      const a = JSON.parse(s) as unknown;
      if (Array.isArray(a)) return a.map(String);
    } catch {
      /* fall through to the comma list */
    }
  }
  return s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}

export function parseServiceArgs(args: ReadonlyArray<{ key: string; value: string }>): ServiceArgs {
  const get = (k: string): string | undefined => args.find((a) => a.key === k)?.value;
  const timeout = Number(get('coordinator_timeout') ?? '30000');
  return {
    peers: list(get('peer_services')),
    adminKeys: list(get('admin_keys')),
    coordinatorTimeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : 30_000,
    version: get('version') ?? '1',
  };
}

/** How a service reaches the other services of its circuit. */
export interface ServiceTransport {
  send(toService: string, msg: Uint8Array): void;
  /** Whether the node of a peer service is connected now. */
  reachable(toService: string): boolean;
}

/**
 * Signature and structure checks of BatchList bodies against a family list, one verdict per
 * body, off the main thread (the node ledger's verify workers).
 */
export type BodyVerifier = (bodies: readonly Uint8Array[], families: string[]) => Promise<VerifyResult[]>;

export interface ServiceOptions {
  db: RootDatabase;
  circuitId: string;
  serviceId: string;
  args: ServiceArgs;
  signer: Signer;
  transport: ServiceTransport;
  verify: BodyVerifier;
  projectors: readonly ProjectorEntry[];
  /** Read-model sub-database names carry this prefix (see store/names.ts). */
  readModelPrefix: string;
  roundMax: number;
  queueHigh: number;
  queueLow: number;
}

export type StatusType = 'Unknown' | 'Pending' | 'Valid' | 'Invalid' | 'Committed';

interface StatusRecord {
  s: 'C' | 'I';
  ts: number;
  txns: string[];
  invalid?: InvalidRecord['invalid_transactions'];
}

interface IntakeRecord {
  bytes: Buffer;
  at: number;
  seq: number;
}

interface Queued extends IntakeRecord {
  id: string;
  fwdAt: number;
}

/** A round executed here and not yet written. */
interface Round {
  id: string;
  height: number;
  ts: number;
  batches: Buffer;
  built: BuiltBlock;
  root: string;
  verdicts: string;
}

interface Coordinating extends Round {
  verified: Set<string>;
  timer: NodeJS.Timeout;
  /** Built while the round before it is written; proposed once that one is applied. */
  unsent: boolean;
}

/** A round executed here: the block built, its root and its verdicts. */
type Executed = { built: BuiltBlock; root: string; verdicts: string };

/** A batch that failed the signature and structure checks. */
interface Forged {
  id: string;
  message: string;
}

interface Proposed {
  /** The batches' signature checks, begun when the proposal arrived (null: every batch passed). */
  checked: Promise<Forged | null>;
  height: number;
  ts: number;
  batches: Buffer;
  parentRoot: string;
  root: string;
  verdicts: string;
}

interface TwoPhaseMsg {
  messageType: number;
  proposalId: Buffer;
  proposalVerificationResponse: number;
  proposalResult: number;
  commitTimeMs: number;
}

/**
 * The state as of one root, with its reads kept while rounds are built on that root: every
 * contract transaction of a round reads the same namespace registries (and the Merkle walk
 * of each read costs several LMDB reads). A root's values never change, so a kept value is
 * exact; the reads are dropped when a round is built on another root. The same bytes object
 * is returned for an address, which lets Sabre decode a registry once per round.
 */
class RoundReads implements StateStore {
  #root = '';
  readonly #kept = new Map<string, Buffer | undefined>();
  constructor(private readonly inner: StateStore) {}
  get(root: string, address: string): Buffer | undefined {
    if (root !== this.#root) {
      this.#root = root;
      this.#kept.clear();
    }
    if (this.#kept.has(address)) return this.#kept.get(address);
    const v = this.inner.get(root, address);
    // Bounded by the addresses one round reads (CAIRN_SCABBARD_ROUND_MAX batches).
    if (this.#kept.size < 100_000) this.#kept.set(address, v);
    return v;
  }
  entries(root: string, prefix: string, opts?: { start?: string; reverse?: boolean }): Generator<{ address: string; value: Buffer }> {
    return this.inner.entries(root, prefix, opts);
  }
  update(root: string, sets: Map<string, Uint8Array>, deletes: Iterable<string>): StateUpdate {
    return this.inner.update(root, sets, deletes);
  }
}

const hex = (b: Uint8Array | string): string => sha256(b).toString('hex');
/** Batches remembered as checked, at most (the oldest are forgotten first). */
const CHECKED_MAX = 65_536;
const batchIdOf = (bytes: Uint8Array): string => decodePb(Batch, bytes).headerSignature;
/** A batch's id for a log line, or a placeholder when the bytes are not a Batch. */
const idForLog = (bytes: Uint8Array): string => {
  try {
    return batchIdOf(bytes) || '(no id)';
  } catch {
    return '(not a Batch)';
  }
};
/** A batch alone in a BatchList: the form the verify workers check (one verdict per batch). */
const asList = (bytes: Uint8Array): Uint8Array => encode(BatchListMsg, { batches: [bytes] });
/** Peer-supplied text in a log line, bounded. */
const short = (m: string): string => (m.length > 200 ? `${m.slice(0, 200)}…` : m);

export class ScabbardService {
  readonly circuitId: string;
  readonly serviceId: string;
  readonly coordinator: string;
  readonly #o: ServiceOptions;
  readonly #s: LedgerStores;
  readonly #intake: Database<IntakeRecord, string>;
  readonly #status: Database<StatusRecord, string>;
  readonly #rounds: Database<RoundRecordMsg, number>;
  readonly #writer: ChainWriter;
  readonly #builder: BlockBuilder;
  /** Accepted and not yet settled, in arrival order. */
  readonly #queue = new Map<string, Queued>();
  /** Batch ids of a round executed here, not yet written (status Valid). */
  readonly #valid = new Set<string>();
  readonly #proposed = new Map<string, Proposed>();
  readonly #waiters = new Set<() => void>();
  #seq = 0;
  #height = 0;
  #lastTs = 0;
  #current: Coordinating | null = null;
  /** The coordinator's agreed round being written (its APPLY goes out once it is durable). */
  #applying: Coordinating | null = null;
  #pending: Round | null = null;
  /**
   * The last round scheduled to be written and not yet durable: its state is staged, so the
   * next round is executed on top of it while it is written (null: build on the stored head).
   */
  #tip: Round | null = null;
  /** Batch and transaction ids of the rounds scheduled to be written, not yet durable. */
  readonly #writingIds = new Set<string>();
  readonly #writingTxns = new Set<string>();
  /** Batches forwarded to the coordinator, stored together at the end of the turn. */
  #forwarded: Array<{ from: string; bytes: Uint8Array }> = [];
  #retry: NodeJS.Timeout | null = null;
  #attempts = 0;
  #note: string | null = null;
  #busy = false;
  #remoteBusy = false;
  #chain: Promise<void> = Promise.resolve();
  #catchUpAt = 0;
  #forwardTimer: NodeJS.Timeout | null = null;
  #closed = false;
  /**
   * Batches whose signatures this node has checked (or that it built itself), by a hash of
   * their bytes: a batch taken at intake or forwarded is not checked again when it comes
   * back in a proposal. The hash covers the whole batch, so a changed byte is checked anew.
   */
  readonly #checked = new Set<string>();
  /** Counts verification requests: a check that ends after a newer request (or the result) is dropped. */
  #verifyGen = 0;
  /** The proposal whose signature checks are in flight for a verification request. */
  #verifyingId: string | null = null;

  constructor(o: ServiceOptions) {
    this.#o = o;
    this.circuitId = o.circuitId;
    this.serviceId = o.serviceId;
    this.coordinator = [o.serviceId, ...o.args.peers].sort()[0] ?? o.serviceId;
    const prefix = scabbardPrefix(o.circuitId, o.serviceId);
    this.#s = openLedgerStores(o.db, prefix);
    const n = scabbardDbNames(prefix);
    this.#intake = openStore<IntakeRecord, string>(o.db, n.intake);
    this.#status = openStore<StatusRecord, string>(o.db, n.status);
    this.#rounds = openStore<RoundRecordMsg, number>(o.db, n.rounds);
    this.#writer = new ChainWriter({
      stores: this.#s,
      leafEncoding: 'raw',
      projectors: o.projectors,
      writeFault: null,
      readModelPrefix: o.readModelPrefix,
    });
    this.#builder = new BlockBuilder(new RoundReads(this.#writer.state), o.signer, scabbardFamilies);
  }

  get isCoordinator(): boolean {
    return this.coordinator === this.serviceId;
  }

  get peers(): string[] {
    return this.#o.args.peers;
  }

  /** Writes the initial state on first start (the admin setting), then loads the intake. */
  async start(): Promise<void> {
    if (!this.#writer.storedHead()) {
      await this.#writer.writeEmptyRoot();
      const tree = new MerkleTree(this.#s.merkle, { leafEncoding: 'raw' });
      const update = tree.update(EMPTY_ROOT, new Map([[ADMIN_SETTING_ADDRESS, adminSettingValue(this.#o.args.adminKeys)]]), []);
      const head: ChainHead = { blockId: `initial-${update.root.slice(0, 16)}`, blockNum: 0, stateRoot: update.root };
      await this.#s.root.transaction(() => {
        for (const [k, v] of update.writes) this.#s.merkle.put(k, v);
        this.#s.meta.put(HEAD_KEY, head);
        this.#s.meta.put('round', { height: 0, ts: 0 });
      });
    }
    const r = this.#s.meta.get('round') as { height: number; ts: number };
    this.#height = r.height;
    this.#lastTs = r.ts;
    const loaded: Queued[] = [];
    for (const { key, value } of this.#intake.getRange()) loaded.push({ ...value, id: key, fwdAt: 0 });
    loaded.sort((a, b) => a.seq - b.seq);
    for (const q of loaded) this.#queue.set(q.id, q);
    this.#seq = (loaded.at(-1)?.seq ?? -1) + 1;
    this.#forwardTimer = setInterval(() => this.#forward(), 1000);
    this.#forwardTimer.unref();
    this.#askCatchUp();
    this.#pump();
  }

  close(): void {
    this.#closed = true;
    if (this.#current) clearTimeout(this.#current.timer);
    if (this.#retry) clearTimeout(this.#retry);
    if (this.#forwardTimer) clearInterval(this.#forwardTimer);
    for (const w of this.#waiters) w();
  }

  // ------------------------------------------------------------------ reads

  head(): ChainHead {
    const head = this.#writer.storedHead();
    if (!head) throw new Error(`scabbard service ${this.serviceId}: the ledger has no head`);
    return head;
  }

  stateRoot(): string {
    return this.head().stateRoot;
  }

  get(address: string): Buffer | undefined {
    return this.#writer.state.get(this.stateRoot(), address);
  }

  entries(prefix: string): Array<{ address: string; value: Buffer }> {
    return [...this.#writer.state.entries(this.stateRoot(), prefix)];
  }

  get height(): number {
    return this.#height;
  }

  status(id: string): { type: StatusType; message: Array<Record<string, unknown>>; ts: number } {
    const rec = this.#status.get(id);
    if (rec?.s === 'C') return { type: 'Committed', message: rec.txns.map((t) => ({ transaction_id: t })), ts: rec.ts };
    if (rec?.s === 'I') {
      const message = (rec.invalid ?? []).map((x) => ({
        transaction_id: x.id,
        error_message: x.message,
        error_data: [...Buffer.from(x.extended_data, 'base64')],
      }));
      return { type: 'Invalid', message, ts: rec.ts };
    }
    const q = this.#queue.get(id);
    // Said in the status of a waiting batch: nothing commits while a member cannot agree.
    const message = this.#note ? [{ transaction_id: '', error_message: this.#note, error_data: [] }] : [];
    if (this.#valid.has(id)) return { type: 'Valid', message, ts: q?.at ?? Date.now() };
    if (q) return { type: 'Pending', message, ts: q.at };
    return { type: 'Unknown', message: [], ts: Date.now() };
  }

  /** The status as the node's own ledger reports one (the data API's batch statuses). */
  ledgerStatus(id: string): StatusEntry {
    const rec = this.#status.get(id);
    if (rec?.s === 'C') return { id, status: 'COMMITTED', invalid_transactions: [] };
    if (rec?.s === 'I') return { id, status: 'INVALID', invalid_transactions: rec.invalid ?? [] };
    if (this.#queue.has(id)) return { id, status: 'PENDING', invalid_transactions: [] };
    return { id, status: 'UNKNOWN', invalid_transactions: [] };
  }

  settled(id: string): boolean {
    return this.#status.get(id) !== undefined;
  }

  /** Resolves on the next commit (or after `ms`). */
  async changed(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
    });
  }

  /** Whether submissions are refused for now (upstream's 429 back-pressure). */
  get busy(): boolean {
    return this.isCoordinator ? this.#busy : this.#remoteBusy;
  }

  // ------------------------------------------------------------------ intake

  /**
   * Checks a submitted BatchList (signatures, payload hashes, structure, Sabre only) in the
   * verify workers; the same verdict as the node ledger's intake gives.
   */
  async checkList(body: Uint8Array): Promise<VerifyResult> {
    const [v] = await this.#o.verify([body], SCABBARD_FAMILY_NAMES);
    if (!v) throw new Error('the verify workers gave no verdict');
    return v;
  }

  /**
   * Checks batches one by one in the verify workers; the first that fails, or null when
   * every batch passes. A failure of the workers themselves counts as a failed check.
   */
  async #checkBatches(batches: readonly Uint8Array[]): Promise<Forged | null> {
    const todo: Array<{ bytes: Uint8Array; h: string }> = [];
    for (const bytes of batches) {
      const h = hex(bytes);
      if (!this.#checked.has(h)) todo.push({ bytes, h });
    }
    if (todo.length === 0) return null;
    try {
      const results = await this.#o.verify(
        todo.map((b) => asList(b.bytes)),
        SCABBARD_FAMILY_NAMES,
      );
      for (const [i, b] of todo.entries()) {
        const r = results[i];
        if (!r) return { id: idForLog(b.bytes), message: 'no verdict' };
        if (!r.ok) return { id: idForLog(b.bytes), message: short(r.message) };
      }
      for (const b of todo) this.#noteChecked(b.h);
      return null;
    } catch (err) {
      return { id: '(any)', message: `the signature checks failed: ${short((err as Error).message)}` };
    }
  }

  #noteChecked(h: string): void {
    this.#checked.add(h);
    if (this.#checked.size > CHECKED_MAX) {
      for (const old of this.#checked) {
        this.#checked.delete(old);
        if (this.#checked.size <= CHECKED_MAX) break;
      }
    }
  }

  /** Checks the batches of an encoded BatchList (a proposal's or a round's). */
  #checkList(batches: Buffer): Promise<Forged | null> {
    let list: Buffer[];
    try {
      list = decode<{ batches: Buffer[] }>(BatchListMsg, batches).batches;
    } catch {
      return Promise.resolve({ id: '(none)', message: 'the batches are not an encoded BatchList' });
    }
    return this.#checkBatches(list);
  }

  /**
   * Forwarded batches (coordinator): checked in the verify workers before they are stored;
   * a batch that fails is dropped with a warning, never stored nor proposed.
   */
  async #acceptForwarded(list: Array<{ from: string; bytes: Uint8Array }>): Promise<void> {
    const fresh: Array<{ from: string; id: string; bytes: Uint8Array }> = [];
    const seen = new Set<string>();
    for (const f of list) {
      let id: string;
      try {
        id = batchIdOf(f.bytes);
      } catch {
        log.warn(`scabbard ${this.circuitId}::${this.serviceId}: a batch forwarded by ${f.from} is not a Batch; dropped`);
        continue;
      }
      // Members forward their unsettled batches again every few seconds: check each once.
      if (seen.has(id) || this.#queue.has(id) || this.settled(id)) continue;
      seen.add(id);
      fresh.push({ from: f.from, id, bytes: f.bytes });
    }
    if (fresh.length === 0) return;
    const results = await this.#o.verify(
      fresh.map((f) => asList(f.bytes)),
      SCABBARD_FAMILY_NAMES,
    );
    const good: Array<{ id: string; bytes: Uint8Array }> = [];
    for (const [i, f] of fresh.entries()) {
      const r = results[i];
      if (r?.ok && r.batches.length === 1 && r.batches[0]?.id === f.id) good.push({ id: f.id, bytes: f.bytes });
      else
        log.warn(
          `scabbard ${this.circuitId}::${this.serviceId}: batch ${f.id} forwarded by ${f.from} fails the signature checks (${short(r && !r.ok ? r.message : 'no verdict')}); dropped`,
        );
    }
    if (good.length > 0 && !this.#closed) await this.accept(good);
  }

  /** Accepts verified batches: durable before this resolves, then proposed (or forwarded). */
  async accept(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    const seen = new Set<string>();
    const fresh = batches.filter((b) => !seen.has(b.id) && seen.add(b.id) && !this.#queue.has(b.id) && !this.settled(b.id));
    if (fresh.length === 0) return;
    const now = Date.now();
    const added: Queued[] = fresh.map((b) => ({ id: b.id, bytes: Buffer.from(b.bytes), at: now, seq: this.#seq++, fwdAt: 0 }));
    // Checked by whoever called (intake, forwarding) or built by this node.
    for (const q of added) this.#noteChecked(hex(q.bytes));
    await this.#intake.transaction(() => {
      for (const q of added) this.#intake.put(q.id, { bytes: q.bytes, at: q.at, seq: q.seq });
    });
    for (const q of added) if (!this.settled(q.id)) this.#queue.set(q.id, q);
    if (this.isCoordinator) {
      this.#pressure();
      this.#pump();
    } else {
      this.#forward(added);
    }
  }

  /** Non-coordinators send their unsettled batches to the coordinator (again after a while). */
  #forward(which?: Queued[]): void {
    if (this.#closed || this.isCoordinator) return;
    const now = Date.now();
    const due = which ?? [...this.#queue.values()].filter((q) => now - q.fwdAt > 3000).slice(0, 500);
    if (due.length === 0 || !this.#o.transport.reachable(this.coordinator)) return;
    for (const q of due) {
      q.fwdAt = now;
      this.#send(this.coordinator, { messageType: MsgType.NEW_BATCH, newBatch: q.bytes });
    }
  }

  /**
   * Upstream refuses at 30 queued batches and accepts again at 15, with one batch per
   * round. A round here takes up to `roundMax`: the marks count the batches queued beyond
   * the round being agreed and the next one, so that rounds stay full under load.
   */
  #pressure(): void {
    const size = (r: Round | null): number => (r ? r.built.included.length + r.built.invalid.length : 0);
    const inRound = size(this.#current) + size(this.#applying);
    const waiting = this.#queue.size - inRound - this.#o.roundMax;
    if (!this.#busy && waiting >= this.#o.queueHigh) {
      this.#busy = true;
      for (const p of this.peers) this.#send(p, { messageType: MsgType.TOO_MANY_REQUESTS });
    } else if (this.#busy && waiting <= this.#o.queueLow) {
      this.#busy = false;
      for (const p of this.peers) this.#send(p, { messageType: MsgType.ACCEPTING_REQUESTS });
    }
  }

  // ------------------------------------------------------------------ execution

  #execute(batches: Buffer, parent: ChainHead): Executed {
    const list = decode<{ batches: Buffer[] }>(BatchListMsg, batches).batches;
    const entries: BuildEntry[] = list.map((bytes) => ({ id: batchIdOf(bytes), bytes, seq: 0, acceptedAt: 0 }));
    const built = this.#builder.build(parent, entries, {
      max: Infinity,
      consensus: Buffer.from('scabbard'),
      isCommittedTxn: (id) => this.#writingTxns.has(id) || this.#writer.ids.hasTxn(id),
      // Deterministic on every member: a missing dependency makes the batch invalid at once.
      dependencyWaitMs: 0,
    });
    const root = built.head?.stateRoot ?? parent.stateRoot;
    const verdicts = hex(
      JSON.stringify([
        built.included.map((i) => i.entry.id),
        built.invalid.map((i) => [i.entry.id, i.record.invalid_transactions[0]?.message ?? '']),
      ]),
    );
    return { built, root, verdicts };
  }

  /** The head the next round builds on: the last round scheduled to be written, or the stored head. */
  #tipHead(): ChainHead {
    const t = this.#tip;
    return t ? (t.built.head ?? t.built.parent) : this.head();
  }

  #tipHeight(): number {
    return this.#tip ? this.#tip.height : this.#height;
  }

  /**
   * Schedules the write of an agreed round after the writes before it, and makes its state
   * readable at once (staged), so that the next round can be executed while it is written.
   * The write itself still checks that its parent is the stored head.
   */
  #scheduleCommit(r: Round): Promise<void> {
    this.#writer.stage(r.built);
    this.#tip = r;
    for (const i of r.built.included) this.#writingIds.add(i.entry.id);
    for (const i of r.built.invalid) this.#writingIds.add(i.entry.id);
    for (const t of r.built.txnIds) this.#writingTxns.add(t);
    return this.#serial(() => this.#commit(r));
  }

  /** Writes a round (all of it in one LMDB transaction); serialized with every other write. */
  async #commit(r: Round): Promise<void> {
    let ok = false;
    try {
      await this.#write(r);
      ok = true;
    } finally {
      this.#writer.unstage(r.built);
      for (const i of r.built.included) this.#writingIds.delete(i.entry.id);
      for (const i of r.built.invalid) this.#writingIds.delete(i.entry.id);
      for (const t of r.built.txnIds) this.#writingTxns.delete(t);
      // A failed write fails the rounds built on it (the writer checks the parent): build on the stored head again.
      if (this.#tip === r || !ok) this.#tip = null;
    }
  }

  async #write(r: Round): Promise<void> {
    const { built, ts, height } = r;
    const settled: Array<[string, StatusRecord]> = [];
    for (const i of built.included) settled.push([i.entry.id, { s: 'C', ts, txns: i.batch.transactions.map((t) => t.headerSignature) }]);
    for (const i of built.invalid) {
      const txns = decodePb(Batch, i.entry.bytes).transactions.map((t) => t.headerSignature);
      settled.push([i.entry.id, { s: 'I', ts, txns, invalid: i.record.invalid_transactions }]);
    }
    await this.#writer.write(built, [['round', { height, ts }]], {
      timestampSec: Math.floor(ts / 1000),
      also: () => {
        for (const [id, rec] of settled) {
          this.#status.put(id, rec);
          this.#intake.remove(id);
        }
        this.#rounds.put(height, { height, timestampMs: ts, batches: r.batches, stateRoot: r.root, verdicts: r.verdicts });
      },
    });
    this.#height = height;
    this.#lastTs = ts;
    for (const [id] of settled) {
      this.#queue.delete(id);
      this.#valid.delete(id);
    }
    for (const w of [...this.#waiters]) w();
  }

  /** Writes a round from inside the serialized writes (catch-up). */
  async #commitNow(r: Round): Promise<void> {
    this.#writer.stage(r.built);
    for (const t of r.built.txnIds) this.#writingTxns.add(t);
    await this.#commit(r);
  }

  #serial(fn: () => Promise<void>): Promise<void> {
    const next = this.#chain.then(fn, fn);
    this.#chain = next.catch((err: unknown) => log.error(`scabbard ${this.circuitId}::${this.serviceId}: write failed: ${(err as Error).message}`));
    return this.#chain;
  }

  // ------------------------------------------------------------------ coordinator

  #pump(): void {
    if (this.#closed || !this.isCoordinator || this.#current || this.#retry || this.#queue.size === 0) return;
    const parent = this.#tipHead();
    const picked: Queued[] = [];
    for (const q of this.#queue.values()) {
      if (picked.length >= this.#o.roundMax) break;
      if (!this.#writingIds.has(q.id)) picked.push(q);
    }
    if (picked.length === 0) return;
    const batches = Buffer.from(encode(BatchListMsg, { batches: picked.map((q) => q.bytes) }));
    const ts = Math.max(Date.now(), (this.#tip ? this.#tip.ts : this.#lastTs) + 1);
    const height = this.#tipHeight() + 1;
    const { built, root, verdicts } = this.#execute(batches, parent);
    const id = hex(`${height}|${parent.stateRoot}|${ts}|${picked.map((q) => q.id).join(',')}`);
    for (const i of built.included) this.#valid.add(i.entry.id);
    const timer = setTimeout(() => this.#reject(`no agreement within ${this.#o.args.coordinatorTimeoutMs} ms`), this.#o.args.coordinatorTimeoutMs);
    timer.unref();
    const cur: Coordinating = { id, height, ts, batches, built, root, verdicts, verified: new Set(), timer, unsent: true };
    this.#current = cur;
    // Proposed once the round before it is applied: members verify it on top of that one.
    if (!this.#applying) this.#propose(cur);
  }

  #propose(cur: Coordinating): void {
    cur.unsent = false;
    const { id, height, ts, batches, root, verdicts } = cur;
    const proposal = encode(Proposal, {
      id: Buffer.from(id, 'ascii'),
      previousId: Buffer.from(cur.built.parent.stateRoot, 'ascii'),
      proposalHeight: height,
      summary: Buffer.from(root, 'ascii'),
      consensusData: Buffer.from(verdicts, 'ascii'),
    });
    for (const p of this.peers) {
      this.#send(p, {
        messageType: MsgType.PROPOSED_BATCH,
        proposedBatch: { proposal: Buffer.from(proposal), batch: Buffer.alloc(0), serviceId: this.serviceId, batches, timestampMs: ts },
      });
      this.#consensus(p, { messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: Buffer.from(id, 'ascii') });
    }
    this.#maybeApply();
  }

  #maybeApply(): void {
    const cur = this.#current;
    if (!cur || cur.unsent || !this.peers.every((p) => cur.verified.has(p))) return;
    clearTimeout(cur.timer);
    this.#current = null;
    this.#applying = cur;
    let applied = false;
    void this.#scheduleCommit(cur)
      .then(() => {
        // APPLY only once the round is durable here (a member never gets ahead of the coordinator).
        if (this.head().stateRoot !== cur.root || this.#height !== cur.height) return;
        applied = true;
        for (const p of this.peers)
          this.#consensus(p, {
            messageType: TwoPhase.RESULT,
            proposalId: Buffer.from(cur.id, 'ascii'),
            proposalResult: TwoPhase.APPLY,
            commitTimeMs: cur.ts,
          });
      })
      .then(() => {
        this.#applying = null;
        if (applied) {
          this.#attempts = 0;
          this.#note = null;
        }
        const next = this.#current;
        if (next?.unsent) {
          if (applied && next.height === this.#height + 1 && next.built.parent.stateRoot === this.head().stateRoot) this.#propose(next);
          else this.#drop(next);
        }
        this.#pressure();
        this.#pump();
      });
    // The next round is executed while this one is written.
    this.#pump();
  }

  /** Forgets a round built on one that was not written (it is proposed again, rebuilt). */
  #drop(cur: Coordinating): void {
    clearTimeout(cur.timer);
    if (this.#current === cur) this.#current = null;
    for (const i of cur.built.included) this.#valid.delete(i.entry.id);
  }

  #reject(why: string): void {
    const cur = this.#current;
    if (!cur) return;
    clearTimeout(cur.timer);
    this.#current = null;
    for (const i of cur.built.included) this.#valid.delete(i.entry.id);
    for (const p of this.peers)
      this.#consensus(p, { messageType: TwoPhase.RESULT, proposalId: Buffer.from(cur.id, 'ascii'), proposalResult: TwoPhase.REJECT });
    const down = this.peers.filter((p) => !cur.verified.has(p));
    this.#note = `Waiting for every member to agree (nothing commits while one cannot): round ${cur.height} got no agreement from ${down.join(', ') || 'a member'} (${why}); it is proposed again`;
    log.warn(`scabbard ${this.circuitId}::${this.serviceId}: round ${cur.height} not agreed (${why}); proposing again`);
    // A rejected round is proposed again (upstream drops it), after a pause that grows.
    const pause = Math.min(2000, 100 * 2 ** this.#attempts++);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.#pump();
    }, pause);
    this.#retry.unref();
  }

  // ------------------------------------------------------------------ messages

  #send(to: string, msg: Partial<ScabbardMsg> & { messageType: number }): void {
    this.#o.transport.send(to, encode(ScabbardMessage, msg));
  }

  #consensus(to: string, m: Partial<TwoPhaseMsg> & { messageType: number }): void {
    const message = encode(TwoPhaseMessage, m);
    this.#send(to, {
      messageType: MsgType.CONSENSUS,
      consensusMessage: Buffer.from(encode(ConsensusMessage, { message, originId: Buffer.from(this.serviceId, 'ascii') })),
    });
  }

  /** A message from another service of the circuit. */
  onMessage(from: string, bytes: Uint8Array): void {
    if (this.#closed || !this.peers.includes(from)) return;
    const m = decode<ScabbardMsg>(ScabbardMessage, bytes);
    switch (m.messageType) {
      case MsgType.NEW_BATCH: {
        if (!this.isCoordinator) return;
        // Forwarded batches of one turn of the event loop are checked together and stored in one intake write.
        this.#forwarded.push({ from, bytes: m.newBatch });
        if (this.#forwarded.length === 1) {
          setImmediate(() => {
            const list = this.#forwarded.splice(0);
            void this.#acceptForwarded(list).catch((err: unknown) => log.warn(`scabbard: forwarded batches not stored: ${(err as Error).message}`));
          });
        }
        return;
      }
      case MsgType.TOO_MANY_REQUESTS:
        if (from === this.coordinator) this.#remoteBusy = true;
        return;
      case MsgType.ACCEPTING_REQUESTS:
        if (from === this.coordinator) this.#remoteBusy = false;
        return;
      case MsgType.PROPOSED_BATCH: {
        const pb = m.proposedBatch;
        if (!pb || from !== this.coordinator) return;
        const p = decode<ProposalMsg>(Proposal, pb.proposal);
        if (this.#proposed.size > 64) this.#proposed.clear();
        this.#proposed.set(p.id.toString('ascii'), {
          // Begun now: the verification request follows at once, and waits for this.
          checked: this.#checkList(pb.batches),
          height: p.proposalHeight,
          ts: pb.timestampMs,
          batches: pb.batches,
          parentRoot: p.previousId.toString('ascii'),
          root: p.summary.toString('ascii'),
          verdicts: p.consensusData.toString('ascii'),
        });
        return;
      }
      case MsgType.CONSENSUS:
        return this.#onConsensus(from, m.consensusMessage);
      case MsgType.CATCH_UP_REQUEST: {
        const rounds: RoundRecordMsg[] = [];
        for (const { value } of this.#rounds.getRange({ start: m.catchUpFrom, limit: 200 })) rounds.push(value);
        this.#send(from, { messageType: MsgType.CATCH_UP_RESPONSE, rounds });
        return;
      }
      case MsgType.CATCH_UP_RESPONSE:
        void this.#serial(() => this.#catchUp(from, m.rounds));
        return;
      default:
        return;
    }
  }

  #onConsensus(from: string, bytes: Buffer): void {
    const cm = decode<{ message: Buffer; originId: Buffer }>(ConsensusMessage, bytes);
    const m = decode<TwoPhaseMsg>(TwoPhaseMessage, cm.message);
    const id = m.proposalId.toString('ascii');
    switch (m.messageType) {
      case TwoPhase.VERIFICATION_REQUEST: {
        if (from !== this.coordinator) return;
        // Not behind the writes: a round is verified on top of the one being written (staged).
        this.#verify(from, id);
        return;
      }
      case TwoPhase.VERIFICATION_RESPONSE: {
        const cur = this.#current;
        if (!cur || cur.id !== id) return;
        if (m.proposalVerificationResponse === TwoPhase.VERIFIED) {
          cur.verified.add(from);
          this.#maybeApply();
        } else {
          this.#reject(`${from} could not verify it`);
        }
        return;
      }
      case TwoPhase.RESULT: {
        if (from !== this.coordinator) return;
        // A result for a proposal still being checked here: the check's outcome is stale.
        if (this.#verifyingId === id) {
          this.#verifyGen++;
          this.#verifyingId = null;
        }
        const pending = this.#pending;
        if (m.proposalResult === TwoPhase.APPLY) {
          if (pending && pending.id === id) {
            this.#pending = null;
            void this.#scheduleCommit(pending);
          } else {
            // Applied elsewhere but not executed here: fetch what was committed.
            this.#askCatchUp(true);
          }
        } else if (pending && pending.id === id) {
          this.#pending = null;
          for (const i of pending.built.included) this.#valid.delete(i.entry.id);
        }
        return;
      }
      default:
        return;
    }
  }

  #verify(coordinator: string, id: string): void {
    const answer = (ok: boolean): void =>
      this.#consensus(coordinator, {
        messageType: TwoPhase.VERIFICATION_RESPONSE,
        proposalId: Buffer.from(id, 'ascii'),
        proposalVerificationResponse: ok ? TwoPhase.VERIFIED : TwoPhase.FAILED,
      });
    const p = this.#proposed.get(id);
    if (this.#pending) {
      for (const i of this.#pending.built.included) this.#valid.delete(i.entry.id);
      this.#pending = null;
    }
    const gen = ++this.#verifyGen;
    this.#verifyingId = null;
    if (!p) return answer(false);
    this.#verifyingId = id;
    // Executed now, on this thread, while every batch's signatures are checked in the verify
    // workers; the result becomes the pending round (and the vote VERIFIED) only once the
    // checks passed, and only if this member's tip is still the one it was executed on.
    const tipHeight = this.#tipHeight();
    const tipRoot = this.#tipHead().stateRoot;
    const early = p.height === tipHeight + 1 && p.parentRoot === tipRoot ? this.#execute(p.batches, this.#tipHead()) : undefined;
    void p.checked.then((forged) => {
      if (this.#closed || gen !== this.#verifyGen) return;
      this.#verifyingId = null;
      if (forged) {
        log.warn(
          `scabbard ${this.circuitId}::${this.serviceId}: round ${p.height}: batch ${forged.id} fails the signature checks (${forged.message}); not verified`,
        );
        return answer(false);
      }
      const same = this.#tipHeight() === tipHeight && this.#tipHead().stateRoot === tipRoot;
      this.#verifyChecked(id, p, answer, same ? early : undefined);
    });
  }

  /**
   * The rest of a verification, once the proposal's signatures passed: execute (or take the
   * execution made while they were checked), compare, hold.
   */
  #verifyChecked(id: string, p: Proposed, answer: (ok: boolean) => void, executed?: Executed): void {
    const head = this.#tipHead();
    const height = this.#tipHeight();
    if (p.height !== height + 1 || p.parentRoot !== head.stateRoot) {
      if (p.height > height + 1) this.#askCatchUp(true);
      log.warn(`scabbard ${this.circuitId}::${this.serviceId}: round ${p.height} does not follow this member's round ${height}; not verified`);
      return answer(false);
    }
    const { built, root, verdicts } = executed ?? this.#execute(p.batches, head);
    if (root !== p.root || verdicts !== p.verdicts) {
      log.warn(
        `scabbard ${this.circuitId}::${this.serviceId}: round ${p.height} gives root ${root.slice(0, 12)}… here, ${p.root.slice(0, 12)}… at the coordinator; not verified`,
      );
      return answer(false);
    }
    for (const i of built.included) this.#valid.add(i.entry.id);
    this.#pending = { id, height: p.height, ts: p.ts, batches: p.batches, built, root, verdicts };
    this.#proposed.delete(id);
    answer(true);
  }

  // ------------------------------------------------------------------ catch-up

  /** Asks the peers (or the coordinator) for the rounds committed after this member's. */
  #askCatchUp(coordinatorOnly = false): void {
    if (this.#closed) return;
    const now = Date.now();
    if (now - this.#catchUpAt < 500) return;
    this.#catchUpAt = now;
    const to = coordinatorOnly && !this.isCoordinator ? [this.coordinator] : this.peers;
    for (const p of to) this.#send(p, { messageType: MsgType.CATCH_UP_REQUEST, catchUpFrom: this.#height + 1 });
  }

  /** A peer's node (re)connected: catch up, re-forward, resend the back-pressure state. */
  peerReachable(): void {
    this.#catchUpAt = 0;
    this.#askCatchUp();
    this.#forward();
    if (this.isCoordinator && this.#busy) for (const p of this.peers) this.#send(p, { messageType: MsgType.TOO_MANY_REQUESTS });
  }

  async #catchUp(from: string, rounds: RoundRecordMsg[]): Promise<void> {
    rounds.sort((a, b) => a.height - b.height);
    // Every batch of the rounds to apply is checked first (in the verify workers, together):
    // a round with a batch that fails stops the catch-up from this peer, nothing of it applied.
    const todo = rounds.filter((r) => r.height > this.#height);
    const checks = await Promise.all(todo.map((r) => this.#checkList(r.batches)));
    for (const [i, forged] of checks.entries()) {
      if (!forged) continue;
      log.warn(
        `scabbard ${this.circuitId}::${this.serviceId}: round ${todo[i]?.height} from ${from}: batch ${forged.id} fails the signature checks (${forged.message}); catch-up from ${from} stopped, nothing applied`,
      );
      return;
    }
    let applied = 0;
    for (const r of rounds) {
      if (r.height <= this.#height) continue;
      if (r.height !== this.#height + 1) break;
      const { built, root, verdicts } = this.#execute(r.batches, this.head());
      if (root !== r.stateRoot || verdicts !== r.verdicts) {
        log.error(
          `scabbard ${this.circuitId}::${this.serviceId}: round ${r.height} from ${from} gives root ${root.slice(0, 12)}… here, not ${r.stateRoot.slice(0, 12)}…; catch-up stopped`,
        );
        return;
      }
      if (this.#pending) this.#pending = null;
      await this.#commitNow({ id: `catch-up-${r.height}`, height: r.height, ts: r.timestampMs, batches: r.batches, built, root, verdicts });
      applied++;
    }
    if (applied > 0) {
      log.info(`scabbard ${this.circuitId}::${this.serviceId}: caught up ${applied} round(s) from ${from}; now at round ${this.#height}`);
      if (rounds.length >= 200) {
        this.#catchUpAt = 0;
        this.#askCatchUp();
      }
      this.#pump();
    }
  }
}

/** Store prefix of a circuit ledger. */
export function scabbardPrefix(circuitId: string, serviceId: string): string {
  return `scabbard.${circuitId}.${serviceId}`;
}
