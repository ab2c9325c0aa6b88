/**
 * The intake of a circuit's state service (service.ts), on the HTTP thread: the batches
 * accepted and not settled yet, in arrival order (each in LMDB before the 202, loaded again
 * when the service starts); a member forwards them to the coordinator (again every few
 * seconds until they settle), the coordinator checks what it is forwarded and tells its
 * committer thread of what it accepts, which rounds it (round-source.ts); and the
 * coordinator's back-pressure (upstream's 429), told to every member. The service settles
 * batches out of the queue as their rounds are written and reads it for their statuses.
 */
import { log } from '../log.js';
import { ownBytes, type ToCommitter } from '../ledger/protocol.js';
import { MsgType, type ScabbardMsg } from './proto.js';
import { batchIdOf, type CircuitStores } from './records.js';
import type { BatchChecks } from './checks.js';
import type { Agreement } from './agreement.js';
import type { ServiceOptions } from './service-options.js';

/** How long a member holds the coordinator's TOO_MANY_REQUESTS (repeated every second while busy). */
export const BUSY_HOLD_MS = 3_000;

/** An accepted batch not settled yet. */
export interface Queued {
  id: string;
  bytes: Buffer;
  at: number;
  seq: number;
  fwdAt: number;
}

/** What the intake needs of its service. */
export interface IntakeHost {
  readonly o: ServiceOptions;
  readonly s: CircuitStores;
  readonly checks: BatchChecks;
  readonly agreement: Agreement;
  /** Accepted and not yet settled, in arrival order: the service's, which reads it for the statuses. */
  readonly queue: Map<string, Queued>;
  readonly label: string;
  readonly coordinator: string;
  readonly isCoordinator: boolean;
  /** A message to the service's committer thread. */
  tell(m: ToCommitter): void;
  send(to: string, msg: Partial<ScabbardMsg> & { messageType: number }): void;
}

export class Intake {
  readonly label: string;
  readonly coordinator: string;
  readonly isCoordinator: boolean;
  readonly #o: ServiceOptions;
  readonly #s: CircuitStores;
  readonly #checks: BatchChecks;
  readonly #agreement: Agreement;
  readonly #queue: Map<string, Queued>;
  readonly #tell: (m: ToCommitter) => void;
  readonly #send: (to: string, msg: Partial<ScabbardMsg> & { messageType: number }) => void;
  #seq = 0;
  #busy = false;
  /** Until when the coordinator's last TOO_MANY_REQUESTS holds (a member). */
  #remoteBusyUntil = 0;
  /** Batches forwarded to the coordinator, stored together at the end of the turn. */
  #forwarded: Array<{ from: string; bytes: Uint8Array }> = [];
  #forwardTimer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(h: IntakeHost) {
    this.label = h.label;
    this.coordinator = h.coordinator;
    this.isCoordinator = h.isCoordinator;
    this.#o = h.o;
    this.#s = h.s;
    this.#checks = h.checks;
    this.#agreement = h.agreement;
    this.#queue = h.queue;
    this.#tell = (m) => h.tell(m);
    this.#send = (to, msg) => h.send(to, msg);
  }

  get peers(): string[] {
    return this.#o.args.peers;
  }

  /** Loads the batches accepted before a restart and not settled, and starts forwarding (a member). */
  start(): void {
    const loaded: Queued[] = [];
    for (const { key, value } of this.#s.intake.getRange()) if (!this.settled(key)) loaded.push({ ...value, id: key, fwdAt: 0 });
    loaded.sort((a, b) => a.seq - b.seq);
    for (const q of loaded) this.#queue.set(q.id, q);
    this.#seq = (loaded.at(-1)?.seq ?? -1) + 1;
    this.#forwardTimer = setInterval(() => {
      this.forward();
      // A busy coordinator says so again while it stays busy: a member's hint expires.
      if (this.#busy) this.tellPressure();
    }, 1000);
    this.#forwardTimer.unref();
  }

  close(): void {
    this.#closed = true;
    if (this.#forwardTimer) clearInterval(this.#forwardTimer);
  }

  settled(id: string): boolean {
    return this.#s.status.doesExist(id);
  }

  /** Whether submissions are refused for now (upstream's 429 back-pressure). */
  get busy(): boolean {
    return this.isCoordinator ? this.#busy : Date.now() < this.#remoteBusyUntil;
  }

  /** A batch a member forwarded (coordinator). */
  received(from: string, bytes: Uint8Array): void {
    if (!this.isCoordinator) return;
    // Forwarded batches of one turn of the event loop are checked together and stored in one intake write.
    this.#forwarded.push({ from, bytes });
    if (this.#forwarded.length === 1) {
      setImmediate(() => {
        const list = this.#forwarded.splice(0);
        void this.#acceptForwarded(list).catch((err: unknown) => log.warn(`scabbard: forwarded batches not stored: ${(err as Error).message}`));
      });
    }
  }

  /**
   * TOO_MANY_REQUESTS (`busy`) or ACCEPTING_REQUESTS from `from`: only the coordinator's
   * count. A TOO_MANY_REQUESTS holds for BUSY_HOLD_MS: the coordinator repeats it every second
   * while it stays busy, so a member whose ACCEPTING_REQUESTS got lost, or that was told
   * "busy" by a peer only claiming the coordinator's node (a trust circuit), takes
   * submissions again within seconds rather than never.
   */
  remotePressure(from: string, busy: boolean): void {
    if (from === this.coordinator) this.#remoteBusyUntil = busy ? Date.now() + BUSY_HOLD_MS : 0;
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
      this.pressure();
    } else {
      this.forward(live);
    }
  }

  /** Non-coordinators send their unsettled batches to the coordinator (again after a while). */
  forward(which?: Queued[]): void {
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
  pressure(): void {
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

  /** The coordinator's back-pressure state, to every member (busy or not). */
  tellPressure(): void {
    if (this.isCoordinator)
      for (const p of this.peers) this.#send(p, { messageType: this.#busy ? MsgType.TOO_MANY_REQUESTS : MsgType.ACCEPTING_REQUESTS });
  }
}
