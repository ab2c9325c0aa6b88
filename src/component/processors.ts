/**
 * The transaction processors the component endpoint (src/component/server.ts) knows: each
 * peer of its socket, the families it registered, which processor of a family runs the next
 * transaction, the process requests in flight to them, and the bookkeeping of a processor
 * that stops answering. The server owns the socket (its messages go out through `send`)
 * and hands over what a processor says: it connects, registers, unregisters, answers,
 * reads or writes its transaction's context, goes away.
 *
 * A processor set aside (a process request timed out, or it missed MAX_MISSED_PINGS pings)
 * is unregistered from its families but kept, with the reason its families have no
 * processor (shown in the batch status while they wait): a late answer or a new
 * registration brings back one set aside for an answer, any message one set aside for its
 * pings. Each change is reported (`ProcessorsReport`) to the HTTP thread for /status and
 * the metrics.
 */
import { randomBytes } from 'node:crypto';
import { encode } from '../proto/index.js';
import type { TxnContext, TxnInfo } from '../families/types.js';
import { familyKey } from './families-setting.js';
import type { ProcessorsReport } from '../ledger/protocol.js';
import { log } from '../log.js';
import * as P from './proto.js';

/**
 * Pings a processor may leave unanswered in a row before it is set aside: with the
 * interval, about the process timeout. The SDKs answer pings from their socket thread, so
 * a processor whose apply hangs still answers them: that one is caught by the timeout.
 */
export const MAX_MISSED_PINGS = 3;

export interface Processor {
  /** ZeroMQ routing id. */
  id: Buffer;
  key: string;
  /** Families it registered, as name\0version. */
  families: Set<string>;
  raw: boolean;
  /** Process requests sent to it and not answered. */
  inFlight: Set<Pending>;
  /** Pings sent since it last said anything. */
  pingsUnanswered: number;
  /**
   * Its families while it is set aside: 'answer' (a process request timed out: a late
   * answer or a new registration brings it back) or 'pings' (it missed its pings: any
   * message brings it back).
   */
  setAside: { families: Set<string>; cause: 'answer' | 'pings' } | null;
}

const newProcessor = (id: Buffer, idKey: string): Processor => ({
  id,
  key: idKey.slice(0, 12),
  families: new Set(),
  raw: false,
  inFlight: new Set(),
  pingsUnanswered: 0,
  setAside: null,
});

/** "name\0version" as people read it. */
const familyName = (key: string): string => key.replace('\0', ' ');

export interface Pending {
  processor: Processor;
  correlationId: string;
  contextId: string;
  ctx: TxnContext;
  timer: NodeJS.Timeout;
  resolve(r: P.ProcessResponseMsg | 'lost'): void;
}

/**
 * A processor's answer to a request in flight. One that does not decode (malformed protobuf,
 * a message that is not UTF-8) is still its answer, an INTERNAL_ERROR: dropped, it left the
 * transaction waiting for the process timeout.
 */
function decodeAnswer(content: Uint8Array): P.ProcessResponseMsg {
  try {
    return P.ProcessResponse.decode(content) as unknown as P.ProcessResponseMsg;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { status: P.ProcessStatus.INTERNAL_ERROR, message: `the answer could not be decoded (${why})`, extendedData: new Uint8Array(0) };
  }
}

/** How the registry sends a message to a peer (the server's socket, in order). */
export type Send = (id: Buffer, kind: number, correlationId: string, content: Uint8Array) => void;

export class ProcessorRegistry {
  readonly #processors = new Map<string, Processor>();
  /** Processors by family key, in registration order. */
  readonly #byFamily = new Map<string, Processor[]>();
  readonly #pending = new Map<string, Pending>();
  readonly #contexts = new Map<string, Pending>();
  /** Woken when a processor registers (a round waiting for one may go on). */
  #rr = 0;
  /** Why a family has no processor, while the one it had is set aside (by family key). */
  readonly #blocked = new Map<string, { processor: Processor; why: string }>();
  /** Since start: transactions whose processor did not answer, and processors set aside. */
  #txnsSetAside = 0;
  #processorsSetAside = 0;
  readonly #onReport: ((r: ProcessorsReport) => void) | undefined;
  /** A processor that does not answer a process request within this time is set aside. */
  readonly #processTimeoutMs: number;
  readonly #send: Send;

  constructor(processTimeoutMs: number, send: Send, onReport?: (r: ProcessorsReport) => void) {
    this.#processTimeoutMs = processTimeoutMs;
    this.#send = send;
    this.#onReport = onReport;
  }

  /** The processor of a peer (hex routing id), if it connected. */
  get(idKey: string): Processor | undefined {
    return this.#processors.get(idKey);
  }

  /** A peer connected (or spoke first): a processor with no family yet. */
  add(id: Buffer, idKey: string): Processor {
    const processor = newProcessor(id, idKey);
    this.#processors.set(idKey, processor);
    return processor;
  }

  /** Whether a family (key) has a processor serving it now. */
  serves(key: string): boolean {
    return (this.#byFamily.get(key)?.length ?? 0) > 0;
  }

  /** Why a family (key) has no processor, while the one it had is set aside. */
  blocked(key: string): { processor: Processor; why: string } | undefined {
    return this.#blocked.get(key);
  }

  /** The next processor of a family, taking turns. */
  pick(key: string): Processor | undefined {
    const list = this.#byFamily.get(key);
    if (!list || list.length === 0) return undefined;
    return list[this.#rr++ % list.length];
  }

  /** Sends a transaction to a processor; resolves with its answer, or 'lost' when it goes away or is set aside first. */
  request(processor: Processor, txn: TxnInfo, headerBytes: Uint8Array, ctx: TxnContext): Promise<P.ProcessResponseMsg | 'lost'> {
    return new Promise((resolve) => {
      const correlationId = randomBytes(16).toString('hex');
      const contextId = randomBytes(16).toString('hex');
      const pending: Pending = {
        processor,
        correlationId,
        contextId,
        ctx,
        resolve,
        timer: setTimeout(() => {
          this.#txnsSetAside++;
          this.setAside(processor, 'answer', `did not answer transaction ${txn.id.slice(0, 16)}… within ${this.#processTimeoutMs} ms`);
          this.#finish(pending, 'lost');
        }, this.#processTimeoutMs),
      };
      this.#pending.set(correlationId, pending);
      this.#contexts.set(contextId, pending);
      processor.inFlight.add(pending);
      const request = processor.raw
        ? { payload: txn.payload, signature: txn.id, contextId, headerBytes }
        : { header: txn.header, payload: txn.payload, signature: txn.id, contextId };
      this.#send(processor.id, P.Kind.TP_PROCESS_REQUEST, correlationId, encode(P.ProcessRequest, request));
    });
  }

  #finish(p: Pending, answer: P.ProcessResponseMsg | 'lost'): void {
    if (!this.#pending.delete(p.correlationId)) return;
    clearTimeout(p.timer);
    this.#contexts.delete(p.contextId);
    p.processor.inFlight.delete(p);
    p.resolve(answer);
  }

  /** The endpoint closes: every request in flight is lost. */
  loseAll(): void {
    for (const p of [...this.#pending.values()]) this.#finish(p, 'lost');
  }

  /** TP_PROCESS_RESPONSE from `processor`. */
  answered(processor: Processor, correlationId: string, content: Uint8Array): void {
    const pending = this.#pending.get(correlationId);
    // An answer to a request this processor was not sent (or no longer waited for) is
    // ignored; a late one shows that a processor set aside for it works again.
    if (!pending || pending.processor !== processor) {
      if (processor.setAside?.cause === 'answer') this.revive(processor, 'answered late');
      return;
    }
    return this.#finish(pending, decodeAnswer(content));
  }

  /** The context of a transaction in flight on this very processor. */
  context(p: Processor, contextId: string): TxnContext | undefined {
    const pending = this.#contexts.get(contextId);
    return pending && pending.processor === p ? pending.ctx : undefined;
  }

  /** A processor went away (a peer that was none is ignored): its families lose it and its requests go elsewhere. */
  remove(idKey: string, why: string): void {
    const p = this.#processors.get(idKey);
    if (!p) return;
    this.#processors.delete(idKey);
    // Logged before the families are cleared, so an idle processor's departure shows too.
    if (p.families.size > 0 || p.inFlight.size > 0 || p.setAside) log.info(`transaction processor ${p.key} ${why}`);
    const served = p.families.size > 0 || p.setAside !== null;
    p.setAside = null;
    for (const [key, b] of this.#blocked) if (b.processor === p) this.#blocked.delete(key);
    this.#unregister(p);
    for (const r of [...p.inFlight]) this.#finish(r, 'lost');
    if (served) this.report();
  }

  /** TP_UNREGISTER_REQUEST: the processor leaves its families (it stays connected). */
  withdraw(processor: Processor): void {
    if (processor.families.size > 0) log.info(`transaction processor ${processor.key} unregistered`);
    processor.setAside = null;
    for (const [key, b] of this.#blocked) if (b.processor === processor) this.#blocked.delete(key);
    this.#unregister(processor);
    this.report();
  }

  /**
   * A processor stopped answering: it is unregistered from its families (kept, to serve
   * them again if it comes back), so that their transactions go to another processor or
   * wait, and the blocks go on without them.
   */
  setAside(p: Processor, cause: 'answer' | 'pings', why: string): void {
    if (p.families.size === 0) return;
    const families = [...p.families];
    log.warn(
      `transaction processor ${p.key} ${why}: set aside from ${families.map(familyName).join(', ')}; ` +
        'their transactions go to another processor of the family or wait until one answers',
    );
    p.setAside = { families: new Set(families), cause };
    for (const key of families) this.#blocked.set(key, { processor: p, why: `its processor ${p.key} ${why}` });
    this.#unregister(p);
    this.#processorsSetAside++;
    this.report();
  }

  /** A processor set aside answers again: it serves its families again. */
  revive(p: Processor, how: string): void {
    const aside = p.setAside;
    if (!aside) return;
    p.setAside = null;
    for (const key of aside.families) {
      if (this.#blocked.get(key)?.processor === p) this.#blocked.delete(key);
      if (!p.families.has(key)) {
        p.families.add(key);
        this.#byFamily.set(key, [...(this.#byFamily.get(key) ?? []), p]);
      }
    }
    log.info(`transaction processor ${p.key} ${how}: it serves ${[...aside.families].map(familyName).join(', ')} again`);
    this.report();
  }

  /** What the HTTP thread shows in /status and the metrics. */
  report(): void {
    if (!this.#onReport) return;
    const families = [...this.#byFamily].map(([key, list]) => ({ family: familyName(key), processors: list.length }));
    const setAside = [...this.#blocked]
      .filter(([key]) => !this.#byFamily.get(key)?.length)
      .map(([key, b]) => ({ family: familyName(key), why: b.why }));
    this.#onReport({ families, setAside, transactionsSetAside: this.#txnsSetAside, processorsSetAside: this.#processorsSetAside });
  }

  #unregister(p: Processor): void {
    for (const key of p.families) {
      const list = this.#byFamily.get(key)?.filter((x) => x !== p) ?? [];
      if (list.length > 0) this.#byFamily.set(key, list);
      else this.#byFamily.delete(key);
    }
    p.families.clear();
  }

  /** Each processor that serves (or was set aside) is pinged; one that missed too many pings is set aside first. */
  pingAll(): void {
    for (const p of this.#processors.values()) {
      if (p.families.size === 0 && p.setAside === null) continue;
      if (p.families.size > 0 && p.pingsUnanswered >= MAX_MISSED_PINGS) {
        this.setAside(p, 'pings', `missed ${p.pingsUnanswered} pings in a row`);
      }
      p.pingsUnanswered++;
      this.#send(p.id, P.Kind.PING_REQUEST, randomBytes(16).toString('hex'), encode(P.PingRequest, {}));
    }
  }

  register(p: Processor, m: P.RegisterRequestMsg, answer: (ok: boolean) => void): void {
    if (!m.family || !m.version || m.family.length > 256 || m.version.length > 256) {
      answer(false);
      return;
    }
    const key = familyKey(m.family, m.version);
    p.raw = m.requestHeaderStyle === P.HeaderStyle.RAW;
    // Registering again is answering again: whatever was set aside serves again.
    this.revive(p, 'registered again');
    if (!p.families.has(key)) {
      p.families.add(key);
      this.#byFamily.set(key, [...(this.#byFamily.get(key) ?? []), p]);
    }
    this.#blocked.delete(key);
    log.info(`transaction processor ${p.key} registered ${m.family} ${m.version} (namespaces ${m.namespaces.join(', ') || 'none'})`);
    answer(true);
    this.report();
  }
}
