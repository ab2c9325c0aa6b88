/**
 * The node's state services: one ScabbardService per `scabbard` roster entry of an Active
 * circuit that names this node, started when the circuit becomes Active (and on restart),
 * closed when it is no longer Active. Messages between services ride the admin service's
 * peer connections as circuit direct messages.
 *
 * A service starts asynchronously (its committer thread); the admin service is told when
 * it runs, and this node reports ready for the circuit only then, so CircuitReady comes
 * once every member's services answer. A start that fails is tried again with a back-off.
 * Until a service of a circuit of this node runs, its routes (and the data API's
 * `service_id`) answer 503 with Retry-After (`lookup`); 404 is for a service this node
 * does not run.
 */
import type { RootDatabase } from 'lmdb';
import { ApiError } from '../http/api-error.js';
import { log } from '../log.js';
import { Status, type CircuitMsg } from '../proto/circuits.js';
import type { ServiceLedger } from '../data-api/backend.js';
import { ScabbardDataLedger } from './data-ledger.js';
import { ScabbardService, parseServiceArgs, scabbardPrefix, type BodyVerifier } from './service.js';
import { scabbardErrors } from './errors.js';

export interface ScabbardLimits {
  /** Batches per round at most (CAIRN_SCABBARD_ROUND_MAX). */
  roundMax: number;
  /** Back-pressure: refuse at this many queued batches, accept again at the low mark. */
  queueHigh: number;
  queueLow: number;
}

const envInt = (name: string, dflt: number): number => {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : dflt;
};

export function scabbardLimits(): ScabbardLimits {
  return {
    roundMax: envInt('CAIRN_SCABBARD_ROUND_MAX', 200),
    queueHigh: envInt('CAIRN_SCABBARD_QUEUE_HIGH', 30),
    queueLow: envInt('CAIRN_SCABBARD_QUEUE_LOW', 15),
  };
}

/**
 * A service whose start failed is tried again after this, doubling up to the maximum (as a
 * committer thread that stops, committer-link.ts): a cause an operator fixes (a damaged key
 * file, a full disk) is seen within 15 s of the fix, and a lasting one costs one thread
 * start and one error line per 15 s.
 */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 15_000;
/** Retry-After (s) of a service on its first start: a committer thread starts in well under a second. */
const STARTING_RETRY_S = 1;

/** A start that failed: when it is tried again (the cause is in the log). */
interface Failed {
  waitMs: number;
  nextAt: number;
  timer: NodeJS.Timeout;
}

/** What the state services get from the admin service's peer connections, and what they tell it. */
export interface ServiceHooks {
  message(circuit: string, sender: string, recipient: string, payload: Buffer): void;
  reachable(nodeId: string): void;
  /** Whether every service of the circuit that runs on this node has started (this node's MEMBER_READY waits for it). */
  running(circuitId: string): boolean;
}

/**
 * What the services need of the circuits' admin service (src/circuits/admin-service.ts, the
 * layer above, implements it): the circuits it keeps, this node's id, its peer connections.
 */
export interface CircuitAdmin {
  readonly store: { circuit(id: string): CircuitMsg | undefined; circuits(): CircuitMsg[] };
  readonly nodeId: string;
  attachServices(hooks: ServiceHooks): void;
  /** Every service of the circuit on this node has started. */
  servicesStarted(circuitId: string): void;
  sendDirect(nodeId: string, circuit: string, sender: string, recipient: string, payload: Uint8Array): void;
  reachable(nodeId: string): boolean;
  /** Calls `sink` after each committed change of the circuits; returns the unsubscribe. */
  subscribe(sink: () => void): () => void;
}

export class ScabbardServices {
  readonly #services = new Map<string, ScabbardService>();
  readonly #starting = new Map<string, Promise<void>>();
  readonly #failed = new Map<string, Failed>();
  readonly #dataLedgers = new WeakMap<ScabbardService, ScabbardDataLedger>();
  #unsubscribe: (() => void) | null = null;
  #closed = false;

  constructor(
    private readonly admin: CircuitAdmin,
    private readonly db: RootDatabase,
    /** The node's key file: the services' committer threads sign their blocks with it. */
    private readonly nodeKeyFile: string,
    /** Signature checks in the node ledger's verify workers (never on this thread). */
    private readonly verify: BodyVerifier,
    private readonly limits: ScabbardLimits = scabbardLimits(),
  ) {
    admin.attachServices({
      message: (circuit, sender, recipient, payload) => {
        const s = this.#services.get(`${circuit}::${recipient}`);
        if (!s) return;
        try {
          s.onMessage(sender, payload);
        } catch (err) {
          log.warn(`scabbard ${circuit}::${recipient}: message from ${sender} not handled: ${(err as Error).message}`);
        }
      },
      reachable: (nodeId) => {
        for (const s of this.#services.values()) {
          const c = this.admin.store.circuit(s.circuitId);
          if (c && s.peers.some((p) => nodeOf(c, p) === nodeId)) s.peerReachable();
        }
      },
      running: (circuitId) => {
        // A circuit that is not Active here runs nothing (a disband's exchange never waits).
        const c = this.admin.store.circuit(circuitId);
        if (!c || (c.circuitStatus || Status.ACTIVE) !== Status.ACTIVE) return true;
        return mine(c, this.admin.nodeId).every((id) => this.#services.has(`${circuitId}::${id}`));
      },
    });
  }

  /**
   * The service a request names: the running service; ApiError 503 with Retry-After while a
   * service of an Active circuit of this node has not started yet (starting, or tried again
   * after a failed start); 404 when this node runs no such service.
   */
  lookup(circuitId: string, serviceId: string): ScabbardService {
    const key = `${circuitId}::${serviceId}`;
    const s = this.#services.get(key);
    if (s) return s;
    const shown = `scabbard service ${serviceId.slice(0, 64)} on circuit ${circuitId.slice(0, 64)}`;
    const c = this.admin.store.circuit(circuitId);
    if (!c || (c.circuitStatus || Status.ACTIVE) !== Status.ACTIVE || !mine(c, this.admin.nodeId).includes(serviceId))
      throw scabbardErrors.serviceNotFound({ service: shown });
    const failed = this.#failed.get(key);
    if (failed && !this.#starting.has(key)) {
      const sec = Math.max(1, Math.ceil((failed.nextAt - Date.now()) / 1000));
      throw scabbardErrors.serviceFailed({ service: shown }, { 'retry-after': String(sec) });
    }
    throw scabbardErrors.serviceStarting({ service: shown }, { 'retry-after': String(STARTING_RETRY_S) });
  }

  /**
   * The data API's view of `<circuit>::<service>` (its ledger, read model prefix, Sabre
   * only), or undefined when this node does not run that service.
   */
  resolve(qualified: string): ServiceLedger | undefined {
    const at = qualified.indexOf('::');
    if (at < 0) return undefined;
    let s: ScabbardService;
    try {
      s = this.lookup(qualified.slice(0, at), qualified.slice(at + 2));
    } catch (err) {
      // A service still starting answers 503 there too; one this node does not run, the data API's own 404.
      if (err instanceof ApiError && err.status === 503) throw err;
      return undefined;
    }
    let ledger = this.#dataLedgers.get(s);
    if (!ledger) {
      ledger = new ScabbardDataLedger(s);
      this.#dataLedgers.set(s, ledger);
    }
    return { ledger, db: this.db, prefix: scabbardPrefix(s.circuitId, s.serviceId), sabre: true };
  }

  async start(): Promise<void> {
    this.#unsubscribe = this.admin.subscribe(() => void this.sync());
    await this.sync();
  }

  /** Stops every service; resolves once their committer threads have stopped. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe?.();
    for (const f of this.#failed.values()) clearTimeout(f.timer);
    this.#failed.clear();
    // A start in flight closes its own service when it ends (#start).
    await Promise.allSettled([...this.#starting.values()]);
    const all = [...this.#services.values()];
    this.#services.clear();
    await Promise.all(all.map((s) => s.close()));
  }

  /** Starts the services of Active circuits, closes those of circuits no longer Active. */
  async sync(): Promise<void> {
    if (this.#closed) return;
    const want = this.#wanted();
    for (const [key, s] of this.#services) {
      if (!want.has(key)) {
        void s.close();
        this.#services.delete(key);
      }
    }
    for (const [key, f] of this.#failed) {
      if (!want.has(key)) {
        clearTimeout(f.timer);
        this.#failed.delete(key);
      }
    }
    const starts: Array<Promise<void>> = [];
    const now = Date.now();
    for (const [key, { c, serviceId }] of want) {
      if (this.#services.has(key)) continue;
      let p = this.#starting.get(key);
      const failed = this.#failed.get(key);
      if (!p && failed && now < failed.nextAt) continue; // its timer tries again
      if (!p) {
        p = this.#start(key, c, serviceId).finally(() => this.#starting.delete(key));
        this.#starting.set(key, p);
      }
      starts.push(p);
    }
    await Promise.all(starts);
  }

  async #start(key: string, c: CircuitMsg, serviceId: string): Promise<void> {
    const svc = c.roster.find((s) => s.serviceId === serviceId);
    if (!svc) throw new Error(`circuit ${c.circuitId} has no service ${serviceId}`);
    const args = parseServiceArgs(svc.arguments);
    const s = new ScabbardService({
      db: this.db,
      circuitId: c.circuitId,
      serviceId,
      args,
      nodeKeyFile: this.nodeKeyFile,
      verify: this.verify,
      transport: {
        send: (to, msg) => {
          const node = nodeOf(c, to);
          if (node) this.admin.sendDirect(node, c.circuitId, serviceId, to, msg);
        },
        reachable: (to) => {
          const node = nodeOf(c, to);
          return node !== undefined && this.admin.reachable(node);
        },
      },
      ...this.limits,
    });
    try {
      await s.start();
    } catch (err) {
      await s.close();
      if (!this.#closed && this.#wanted().has(key)) this.#retryLater(key, (err as Error).message);
      return;
    }
    if (this.#closed || !this.#wanted().has(key)) {
      // Closed, or the circuit left Active, while it started.
      await s.close();
      return;
    }
    const retried = this.#failed.get(key);
    if (retried) {
      clearTimeout(retried.timer);
      this.#failed.delete(key);
    }
    this.#services.set(key, s);
    log.info(`scabbard ${key}: started at round ${s.height} (state root ${s.stateRoot().slice(0, 12)}…, coordinator ${s.coordinator})`);
    this.admin.servicesStarted(c.circuitId);
  }

  /** A failed start: logged, and tried again after the back-off (doubled on each failure in a row). */
  #retryLater(key: string, reason: string): void {
    const prev = this.#failed.get(key);
    const waitMs = prev ? Math.min(MAX_RETRY_MS, prev.waitMs * 2) : FIRST_RETRY_MS;
    log.error(`scabbard ${key}: failed to start: ${reason}; trying again in ${waitMs} ms`);
    const timer = setTimeout(() => {
      const f = this.#failed.get(key);
      if (f) f.nextAt = 0; // due now, even if the timer fired a little early
      void this.sync();
    }, waitMs);
    timer.unref();
    this.#failed.set(key, { waitMs, nextAt: Date.now() + waitMs, timer });
  }

  /** The services this node must run now: the scabbard services of its Active circuits, by `circuit::service`. */
  #wanted(): Map<string, { c: CircuitMsg; serviceId: string }> {
    const want = new Map<string, { c: CircuitMsg; serviceId: string }>();
    for (const c of this.admin.store.circuits()) {
      if ((c.circuitStatus || Status.ACTIVE) !== Status.ACTIVE) continue;
      for (const id of mine(c, this.admin.nodeId)) want.set(`${c.circuitId}::${id}`, { c, serviceId: id });
    }
    return want;
  }
}

function nodeOf(c: CircuitMsg, serviceId: string): string | undefined {
  return c.roster.find((s) => s.serviceId === serviceId)?.allowedNodes[0];
}

/** The ids of the circuit's scabbard services that run on node `me`. */
function mine(c: CircuitMsg, me: string): string[] {
  return c.roster.filter((s) => s.serviceType === 'scabbard' && s.allowedNodes.includes(me)).map((s) => s.serviceId);
}
