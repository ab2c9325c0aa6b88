/**
 * One state service of a circuit (scabbard, research circuits.md §3) as the HTTP thread
 * holds it: the intake (an accepted batch is in LMDB before the 202, then proposed until it
 * settles; a member forwards it to the coordinator), the messages of the circuit, its
 * agreement (agreement.ts), and the reads (head, state, statuses) through synchronous LMDB
 * reads. The ledger itself is an instance of the engine on a committer thread of its own
 * (compose.ts): it executes the rounds (the coordinator builds them, a member verifies by
 * executing), writes the agreed ones (state, head, receipts, statuses, intake removal,
 * round log, read model: one LMDB transaction, stamped with the round's time as the
 * coordinator proposed it) and re-executes rounds fetched from a peer when behind.
 *
 * Where it does better than upstream (docs/circuits.md): a round carries up to `roundMax`
 * batches; statuses are stored; a rejected or timed-out round is proposed again; a member
 * that is behind fetches the committed rounds it lacks from a peer and re-executes them; a
 * committer thread that stops (a failed write) is replaced (committer-link.ts).
 */
import type { RootDatabase } from 'lmdb';
import { log } from '../log.js';
import { ownBytes, type BlockEvent, type ToCommitter } from '../ledger/protocol.js';
import type { StatusEntry } from '../ledger/query.js';
import { StatusWaiters } from '../ledger/status-waiters.js';
import { StateReader } from '../state/reader.js';
import { HEAD, type ChainHead } from '../store/ledger-stores.js';
import { dataDirOf } from '../store/db.js';
import type { VerifyResult } from '../ledger/verify.js';
import { MsgType, ScabbardMessage, decode, encode, type RoundRecordMsg, type ScabbardMsg } from './proto.js';
import { ROUND, batchIdOf, openCircuitStores, scabbardPrefix, type CircuitStores } from './records.js';
import { BatchChecks, type BodyVerifier } from './checks.js';
import { Agreement } from './agreement.js';
import { CommitterLink } from './committer-link.js';
import type { ServiceArgs } from './args.js';

export { parseServiceArgs, type ServiceArgs } from './args.js';
export { scabbardPrefix } from './records.js';
export type { BodyVerifier } from './checks.js';

/** How a service reaches the other services of its circuit. */
export interface ServiceTransport {
  send(toService: string, msg: Uint8Array): void;
  /** Whether the node of a peer service is connected now. */
  reachable(toService: string): boolean;
}

export interface ServiceOptions {
  db: RootDatabase;
  circuitId: string;
  serviceId: string;
  args: ServiceArgs;
  /** The node's key file: the committer thread signs the ledger's blocks with it (absent: a key of its own). */
  nodeKeyFile?: string;
  transport: ServiceTransport;
  verify: BodyVerifier;
  roundMax: number;
  queueHigh: number;
  queueLow: number;
}

export type StatusType = 'Unknown' | 'Pending' | 'Valid' | 'Invalid' | 'Committed';

/** An accepted batch not settled yet. */
interface Queued {
  id: string;
  bytes: Buffer;
  at: number;
  seq: number;
  fwdAt: number;
}

/** Rounds a catch-up answer holds at most. */
const CATCH_UP_ROUNDS = 200;

export class ScabbardService {
  readonly circuitId: string;
  readonly serviceId: string;
  readonly coordinator: string;
  readonly label: string;
  readonly #o: ServiceOptions;
  readonly #s: CircuitStores;
  readonly #state: StateReader;
  readonly #checks: BatchChecks;
  readonly #agreement: Agreement;
  /** Accepted and not yet settled, in arrival order. */
  readonly #queue = new Map<string, Queued>();
  /** Batch ids of a round executed and not yet written (status Valid). */
  readonly #valid = new Set<string>();
  readonly #waiters = new StatusWaiters();
  #engine: CommitterLink | null = null;
  #seq = 0;
  #height = 0;
  #busy = false;
  #remoteBusy = false;
  #catchUpAt = 0;
  /** Catch-up asks for more once the round of this height is written (a full answer came). */
  #catchUpMore = 0;
  /** Batches forwarded to the coordinator, stored together at the end of the turn. */
  #forwarded: Array<{ from: string; bytes: Uint8Array }> = [];
  #forwardTimer: NodeJS.Timeout | null = null;
  #closed = false;
  /** Why the committer thread stopped, until a new one runs (said in the status of waiting batches). */
  #fault: string | null = null;

  constructor(o: ServiceOptions) {
    this.#o = o;
    this.circuitId = o.circuitId;
    this.serviceId = o.serviceId;
    this.label = `scabbard ${o.circuitId}::${o.serviceId}`;
    this.coordinator = [o.serviceId, ...o.args.peers].sort()[0] ?? o.serviceId;
    this.#s = openCircuitStores(o.db, scabbardPrefix(o.circuitId, o.serviceId));
    this.#state = new StateReader(this.#s.ledger, { leafEncoding: 'raw' });
    this.#checks = new BatchChecks(o.verify, this.label);
    this.#agreement = new Agreement({
      serviceId: o.serviceId,
      coordinator: this.coordinator,
      peers: o.args.peers,
      label: this.label,
      coordinatorTimeoutMs: o.args.coordinatorTimeoutMs,
      tell: (m) => this.#tell(m),
      send: (to, msg) => this.#send(to, msg),
      valid: this.#valid,
      checks: this.#checks,
      askCatchUp: (coordinatorOnly) => this.#askCatchUp(coordinatorOnly),
      pressure: () => this.#pressure(),
    });
  }

  get isCoordinator(): boolean {
    return this.coordinator === this.serviceId;
  }

  get peers(): string[] {
    return this.#o.args.peers;
  }

  /** Starts the ledger's committer thread (it writes the initial state on first start), then loads the intake. */
  async start(): Promise<void> {
    await this.#startCommitter();
    const loaded: Queued[] = [];
    for (const { key, value } of this.#s.intake.getRange()) if (!this.settled(key)) loaded.push({ ...value, id: key, fwdAt: 0 });
    loaded.sort((a, b) => a.seq - b.seq);
    for (const q of loaded) this.#queue.set(q.id, q);
    this.#seq = (loaded.at(-1)?.seq ?? -1) + 1;
    this.#forwardTimer = setInterval(() => this.#forward(), 1000);
    this.#forwardTimer.unref();
    this.#askCatchUp();
    this.#pressure();
    this.#tellPressure();
  }

  /** Starts the committer thread; the height is read once it runs. */
  async #startCommitter(): Promise<void> {
    const link = new CommitterLink(
      {
        dataDir: dataDirOf(this.#o.db),
        nodeKeyFile: this.#o.nodeKeyFile ?? '',
        maxBatchesPerBlock: 0,
        minBlockIntervalMs: 0,
        queueMultiplier: 1,
        queueInitialAverage: 1,
        circuit: {
          circuitId: this.circuitId,
          serviceId: this.serviceId,
          coordinator: this.isCoordinator,
          adminKeys: this.#o.args.adminKeys,
          roundMax: this.#o.roundMax,
        },
      },
      {
        onBlock: (e) => this.#written(e),
        onRound: (m) => (m.type === 'summary' ? this.#agreement.onSummary(m) : this.#agreement.onDropped(m.id)),
        onLost: (reason) => {
          // Nothing commits meanwhile; the cause is in the status of every waiting batch.
          this.#fault = reason;
          this.#agreement.committerLost();
        },
        onRestarted: () => {
          this.#fault = null;
          this.#readHeight();
          log.info(`${this.label}: a new committer thread runs from round ${this.#height}`);
          this.#askCatchUp();
        },
      },
      this.label,
    );
    this.#engine = link;
    await link.start();
    this.#readHeight();
  }

  #readHeight(): void {
    this.#s.ledger.root.resetReadTxn();
    this.#height = ROUND.get(this.#s.ledger.meta)?.height ?? 0;
  }

  /** Stops the service; resolves once its committer thread has finished the rounds in flight. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#agreement.close();
    if (this.#forwardTimer) clearInterval(this.#forwardTimer);
    this.#waiters.close();
    await this.#engine?.close();
  }

  #tell(m: ToCommitter): void {
    if (!this.#closed) this.#engine?.tell(m);
  }

  /** A round is durable: its batches are settled, waiters woken, its APPLY goes out. */
  #written(e: BlockEvent): void {
    this.#s.ledger.root.resetReadTxn();
    if (e.round) this.#height = e.round.height;
    for (const ids of [e.committed, e.invalid]) {
      for (const id of ids) {
        this.#queue.delete(id);
        this.#valid.delete(id);
        this.#waiters.settle(id);
      }
    }
    if (e.round) {
      this.#agreement.onWritten(e.round.id, e.round.ts);
      if (e.round.id.startsWith('catch-up-')) log.info(`${this.label}: caught up round ${e.round.height}`);
      if (this.#catchUpMore !== 0 && e.round.height >= this.#catchUpMore) {
        this.#catchUpMore = 0;
        this.#catchUpAt = 0;
        this.#askCatchUp();
      }
    }
    this.#pressure();
  }

  // ------------------------------------------------------------------ reads

  head(): ChainHead {
    const head = HEAD.get(this.#s.ledger.meta);
    if (!head) throw new Error(`scabbard service ${this.serviceId}: the ledger has no head`);
    return head;
  }

  stateRoot(): string {
    return this.head().stateRoot;
  }

  get(address: string): Buffer | undefined {
    return this.#state.get(this.stateRoot(), address);
  }

  entries(prefix: string): Array<{ address: string; value: Buffer }> {
    return [...this.#state.entries(this.stateRoot(), prefix)];
  }

  get height(): number {
    return this.#height;
  }

  status(id: string): { type: StatusType; message: Array<Record<string, unknown>>; ts: number } {
    const rec = this.#s.status.get(id);
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
    const note = this.#fault ?? this.#agreement.note;
    const message = note ? [{ transaction_id: '', error_message: note, error_data: [] }] : [];
    if (this.#valid.has(id)) return { type: 'Valid', message, ts: q?.at ?? Date.now() };
    if (q) return { type: 'Pending', message, ts: q.at };
    return { type: 'Unknown', message: [], ts: Date.now() };
  }

  /** The status as the node's own ledger reports one (the data API's batch statuses). */
  ledgerStatus(id: string): StatusEntry {
    const rec = this.#s.status.get(id);
    if (rec?.s === 'C') return { id, status: 'COMMITTED', invalid_transactions: [] };
    if (rec?.s === 'I') return { id, status: 'INVALID', invalid_transactions: rec.invalid ?? [] };
    if (this.#queue.has(id)) return { id, status: 'PENDING', invalid_transactions: [] };
    return { id, status: 'UNKNOWN', invalid_transactions: [] };
  }

  settled(id: string): boolean {
    return this.#s.status.doesExist(id);
  }

  /** Resolves once every one of `ids` is settled, or after `ms` (woken by the committer's round events). */
  waitSettled(ids: string[], ms: number): Promise<void> {
    return this.#waiters.waitFor(
      ids.filter((id) => !this.settled(id)),
      ms,
    );
  }

  /** Resolves once none of `ids` is pending here any more, or after `ms`. */
  waitNotPending(ids: string[], ms: number): Promise<void> {
    return this.#waiters.waitFor(
      ids.filter((id) => this.#queue.has(id)),
      ms,
    );
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
  checkList(body: Uint8Array): Promise<VerifyResult> {
    return this.#checks.list(body);
  }

  /** Forwarded batches (coordinator): checked in the verify workers before they are stored. */
  async #acceptForwarded(list: Array<{ from: string; bytes: Uint8Array }>): Promise<void> {
    const fresh: Array<{ from: string; id: string; bytes: Uint8Array }> = [];
    const seen = new Set<string>();
    for (const f of list) {
      let id: string;
      try {
        id = batchIdOf(f.bytes);
      } catch {
        log.warn(`${this.label}: a batch forwarded by ${f.from} is not a Batch; dropped`);
        continue;
      }
      // Members forward their unsettled batches again every few seconds: check each once.
      if (seen.has(id) || this.#queue.has(id) || this.settled(id)) continue;
      seen.add(id);
      fresh.push({ from: f.from, id, bytes: f.bytes });
    }
    if (fresh.length === 0) return;
    const good = await this.#checks.forwarded(fresh);
    if (good.length > 0 && !this.#closed) await this.accept(good);
  }

  /** Accepts verified batches: durable before this resolves, then rounded (or forwarded). */
  async accept(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    const seen = new Set<string>();
    const fresh = batches.filter((b) => !seen.has(b.id) && seen.add(b.id) && !this.#queue.has(b.id) && !this.settled(b.id));
    if (fresh.length === 0) return;
    const now = Date.now();
    const added: Queued[] = fresh.map((b) => ({ id: b.id, bytes: Buffer.from(b.bytes), at: now, seq: this.#seq++, fwdAt: 0 }));
    // Checked by whoever called (intake, forwarding) or built by this node.
    for (const q of added) this.#checks.note(q.bytes);
    await this.#s.intake.transaction(() => {
      for (const q of added) this.#s.intake.put(q.id, { bytes: q.bytes, at: q.at, seq: q.seq });
    });
    const live = added.filter((q) => !this.settled(q.id));
    for (const q of live) this.#queue.set(q.id, q);
    if (this.isCoordinator) {
      this.#tell({ type: 'intake', batches: live.map((q) => ({ id: q.id, bytes: ownBytes(q.bytes) })) });
      this.#pressure();
    } else {
      this.#forward(live);
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
    if (!this.isCoordinator) return;
    const waiting = this.#queue.size - this.#agreement.inRounds - this.#o.roundMax;
    if (!this.#busy && waiting >= this.#o.queueHigh) {
      this.#busy = true;
      for (const p of this.peers) this.#send(p, { messageType: MsgType.TOO_MANY_REQUESTS });
    } else if (this.#busy && waiting <= this.#o.queueLow) {
      this.#busy = false;
      for (const p of this.peers) this.#send(p, { messageType: MsgType.ACCEPTING_REQUESTS });
    }
  }

  // ------------------------------------------------------------------ messages

  #send(to: string, msg: Partial<ScabbardMsg> & { messageType: number }): void {
    this.#o.transport.send(to, encode(ScabbardMessage, msg));
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
      case MsgType.PROPOSED_BATCH:
        if (m.proposedBatch && from === this.coordinator) this.#agreement.onProposed(m.proposedBatch);
        return;
      case MsgType.CONSENSUS:
        return this.#agreement.onConsensus(from, m.consensusMessage);
      case MsgType.CATCH_UP_REQUEST: {
        const rounds: RoundRecordMsg[] = [];
        for (const { value } of this.#s.rounds.getRange({ start: m.catchUpFrom, limit: CATCH_UP_ROUNDS })) rounds.push(value);
        this.#send(from, { messageType: MsgType.CATCH_UP_RESPONSE, rounds });
        return;
      }
      case MsgType.CATCH_UP_RESPONSE:
        void this.#catchUp(from, m.rounds);
        return;
      default:
        return;
    }
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

  /**
   * A peer's node (re)connected: catch up, re-forward, resend the back-pressure state, busy or
   * not (and once more when the service starts: a restarted coordinator's peers may connect
   * before it runs): a member that missed the coordinator's ACCEPTING_REQUESTS (sent while it
   * was away, or never, the TOO_MANY_REQUESTS having come from a peer that only claimed the
   * coordinator's node) refused every submission until the coordinator was busy again.
   */
  peerReachable(): void {
    this.#catchUpAt = 0;
    this.#askCatchUp();
    this.#forward();
    this.#tellPressure();
  }

  /** The coordinator's back-pressure state, to every member (busy or not). */
  #tellPressure(): void {
    if (this.isCoordinator)
      for (const p of this.peers) this.#send(p, { messageType: this.#busy ? MsgType.TOO_MANY_REQUESTS : MsgType.ACCEPTING_REQUESTS });
  }

  /**
   * Rounds a peer committed: every batch of the rounds to apply is checked first (in the
   * verify workers, together); a round with a batch that fails stops the catch-up from this
   * peer, nothing of it applied. The committer re-executes the rest and writes each round
   * that gives the root and verdicts it gave there.
   */
  async #catchUp(from: string, rounds: RoundRecordMsg[]): Promise<void> {
    const todo = rounds.filter((r) => r.height > this.#height).sort((a, b) => a.height - b.height);
    if (todo.length === 0) return;
    const checks = await Promise.all(todo.map((r) => this.#checks.encoded(r.batches)));
    for (const [i, forged] of checks.entries()) {
      if (!forged) continue;
      log.warn(
        `${this.label}: round ${todo[i]?.height} from ${from}: batch ${forged.id} fails the signature checks (${forged.message}); catch-up from ${from} stopped, nothing applied`,
      );
      return;
    }
    if (this.#closed) return;
    if (rounds.length >= CATCH_UP_ROUNDS) this.#catchUpMore = todo.at(-1)?.height ?? 0;
    this.#tell({
      type: 'catch-up',
      from,
      rounds: todo.map((r) => ({ height: r.height, ts: r.timestampMs, batches: r.batches, root: r.stateRoot, verdicts: r.verdicts })),
    });
  }
}
