/**
 * One state service of a circuit (scabbard, research circuits.md §3) as the HTTP thread
 * holds it: the intake (intake.ts: an accepted batch is in LMDB before the 202, then proposed
 * until it settles; a member forwards it to the coordinator; the coordinator's back-pressure),
 * the messages of the circuit, its agreement (agreement.ts), and the reads (head, state,
 * statuses) through synchronous LMDB reads. The ledger itself is an instance of the engine
 * on a committer thread of its own (compose.ts): it executes the rounds (the coordinator
 * builds them, a member verifies by executing), writes the agreed ones (state, head,
 * receipts, statuses, intake removal, round log, read model: one LMDB transaction, stamped
 * with the round's time as the coordinator proposed it) and re-executes rounds fetched from
 * a peer when behind.
 *
 * Where it does better than upstream (docs/circuits.md): a round carries up to `roundMax`
 * batches; statuses are stored; a rejected or timed-out round is proposed again; a member
 * that is behind fetches the committed rounds it lacks from a peer and re-executes them; a
 * committer thread that stops (a failed write) is replaced (committer-link.ts).
 */
import { log } from '../log.js';
import type { BlockEvent, ToCommitter } from '../ledger/protocol.js';
import type { StatusEntry } from '../ledger/query.js';
import { StatusWaiters } from '../ledger/status-waiters.js';
import { StateReader } from '../state/reader.js';
import { HEAD, type ChainHead } from '../store/ledger-stores.js';
import { dataDirOf } from '../store/db.js';
import type { VerifyResult } from '../ledger/verify.js';
import { MsgType, ScabbardMessage, decode, encode, type RoundRecordMsg, type ScabbardMsg } from './proto.js';
import { ROUND, openCircuitStores, scabbardPrefix, type CircuitStores } from './records.js';
import { BatchChecks } from './checks.js';
import { Agreement } from './agreement.js';
import { CommitterLink } from './committer-link.js';
import { Intake, type Queued } from './intake.js';
import type { ServiceOptions } from './service-options.js';

export { parseServiceArgs, type ServiceArgs } from './args.js';
export { scabbardPrefix } from './records.js';
export type { BodyVerifier } from './checks.js';
export type { ServiceOptions, ServiceTransport } from './service-options.js';

export type StatusType = 'Unknown' | 'Pending' | 'Valid' | 'Invalid' | 'Committed';

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
  readonly #intake: Intake;
  /** Accepted and not yet settled, in arrival order (the intake adds, written rounds settle). */
  readonly #queue = new Map<string, Queued>();
  /** Batch ids of a round executed and not yet written (status Valid). */
  readonly #valid = new Set<string>();
  readonly #waiters = new StatusWaiters();
  #engine: CommitterLink | null = null;
  #height = 0;
  #catchUpAt = 0;
  /** Catch-up asks for more once the round of this height is written (a full answer came). */
  #catchUpMore = 0;
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
      pressure: () => this.#intake.pressure(),
    });
    this.#intake = new Intake({
      o,
      s: this.#s,
      checks: this.#checks,
      agreement: this.#agreement,
      queue: this.#queue,
      label: this.label,
      coordinator: this.coordinator,
      isCoordinator: this.isCoordinator,
      tell: (m) => this.#tell(m),
      send: (to, msg) => this.#send(to, msg),
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
    this.#intake.start();
    this.#askCatchUp();
    this.#intake.pressure();
    this.#intake.tellPressure();
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
    this.#intake.close();
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
    this.#intake.pressure();
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
    return this.#intake.settled(id);
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
    return this.#intake.busy;
  }

  // ------------------------------------------------------------------ intake

  /**
   * Checks a submitted BatchList (signatures, payload hashes, structure, Sabre only) in the
   * verify workers; the same verdict as the node ledger's intake gives.
   */
  checkList(body: Uint8Array): Promise<VerifyResult> {
    return this.#checks.list(body);
  }

  /** Accepts verified batches: durable before this resolves, then rounded (or forwarded). */
  accept(batches: Array<{ id: string; bytes: Uint8Array }>): Promise<void> {
    return this.#intake.accept(batches);
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
      case MsgType.NEW_BATCH:
        return this.#intake.received(from, m.newBatch);
      case MsgType.TOO_MANY_REQUESTS:
        return this.#intake.remotePressure(from, true);
      case MsgType.ACCEPTING_REQUESTS:
        return this.#intake.remotePressure(from, false);
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
    this.#intake.forward();
    this.#intake.tellPressure();
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
