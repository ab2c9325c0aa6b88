/**
 * The node's state services: one ScabbardService per `scabbard` roster entry of an Active
 * circuit that names this node, started when the circuit becomes Active (and on restart),
 * closed when it is no longer Active. Messages between services ride the admin service's
 * peer connections as circuit direct messages.
 */
import type { RootDatabase } from 'lmdb';
import { log } from '../log.js';
import type { AdminService } from '../circuits/admin-service.js';
import { Status, type CircuitMsg } from '../circuits/proto.js';
import type { ServiceLedger } from '../data-api/backend.js';
import { ScabbardDataLedger } from './data-ledger.js';
import { ScabbardService, parseServiceArgs, scabbardPrefix, type BodyVerifier } from './service.js';

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

export class ScabbardServices {
  readonly #services = new Map<string, ScabbardService>();
  readonly #starting = new Map<string, Promise<void>>();
  readonly #dataLedgers = new WeakMap<ScabbardService, ScabbardDataLedger>();
  #unsubscribe: (() => void) | null = null;

  constructor(
    private readonly admin: AdminService,
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
    });
  }

  /** The service `circuit::service` if this node runs it. */
  get(circuitId: string, serviceId: string): ScabbardService | undefined {
    return this.#services.get(`${circuitId}::${serviceId}`);
  }

  /**
   * The data API's view of `<circuit>::<service>` (its ledger, read model prefix, Sabre
   * only), or undefined when this node does not run that service.
   */
  resolve(qualified: string): ServiceLedger | undefined {
    const at = qualified.indexOf('::');
    if (at < 0) return undefined;
    const s = this.get(qualified.slice(0, at), qualified.slice(at + 2));
    if (!s) return undefined;
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
    this.#unsubscribe?.();
    const all = [...this.#services.values()];
    this.#services.clear();
    await Promise.all(all.map((s) => s.close()));
  }

  /** Starts the services of Active circuits, closes those of circuits no longer Active. */
  async sync(): Promise<void> {
    const me = this.admin.nodeId;
    const want = new Map<string, { c: CircuitMsg; serviceId: string }>();
    for (const c of this.admin.store.circuits()) {
      if ((c.circuitStatus || Status.ACTIVE) !== Status.ACTIVE) continue;
      for (const svc of c.roster) {
        if (svc.serviceType === 'scabbard' && svc.allowedNodes.includes(me))
          want.set(`${c.circuitId}::${svc.serviceId}`, { c, serviceId: svc.serviceId });
      }
    }
    for (const [key, s] of this.#services) {
      if (!want.has(key)) {
        void s.close();
        this.#services.delete(key);
      }
    }
    const starts: Array<Promise<void>> = [];
    for (const [key, { c, serviceId }] of want) {
      if (this.#services.has(key)) continue;
      let p = this.#starting.get(key);
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
      log.error(`scabbard ${key}: failed to start: ${(err as Error).message}`);
      await s.close();
      return;
    }
    this.#services.set(key, s);
    log.info(`scabbard ${key}: started at round ${s.height} (state root ${s.stateRoot().slice(0, 12)}…, coordinator ${s.coordinator})`);
  }
}

function nodeOf(c: CircuitMsg, serviceId: string): string | undefined {
  return c.roster.find((s) => s.serviceId === serviceId)?.allowedNodes[0];
}
