/**
 * What the HTTP thread keeps of a ledger's external executor (the component endpoint's
 * transaction processors, run in the committer thread): the processors' last report and
 * who listens to it, the pending batches that wait on a processor (with why), and the
 * traffic of the endpoint's clients, held while the node starts until the client service
 * (src/component/client-service.ts) attaches. src/ledger/ledger.ts owns one.
 */
import type { ClientTraffic, ProcessorsReport } from './protocol.js';
import type { ProcessorsMessage } from './committer-client.js';

/** Client messages kept while the node starts (before the client service is attached). */
const MAX_EARLY_CLIENT_MESSAGES = 1024;

export class ExecutorNews {
  /** The processors as last reported (null: no executor, or none reported yet). */
  processors: ProcessorsReport | null = null;
  readonly #listeners = new Set<(r: ProcessorsReport) => void>();
  /** Pending batches that wait on a transaction processor, with why (until they settle). */
  readonly #setAside = new Map<string, string>();
  #clientHandler: ((m: ClientTraffic) => void) | null = null;
  /** Client messages that came before a handler was attached (start-up), bounded. */
  readonly #clientEarly: ClientTraffic[] = [];

  /** A report of the committer; `pending(id)`: whether the batch is still pending. */
  report(m: ProcessorsMessage, pending: (id: string) => boolean): void {
    if (m.type === 'set-aside') {
      // Only batches still pending: one settled meanwhile (its event came first) is not kept.
      for (const [id, why] of m.batches) if (pending(id)) this.#setAside.set(id, why);
      return;
    }
    this.processors = m.report;
    for (const l of this.#listeners) l(m.report);
  }

  /** A new committer runs: it tells again which batches wait, as it meets them, and its endpoint counts from zero. */
  restarted(): void {
    this.#setAside.clear();
    if (this.processors)
      this.report({ type: 'processors', report: { families: [], setAside: [], transactionsSetAside: 0, processorsSetAside: 0 } }, () => false);
  }

  /** A batch settled: it waits on nothing any more. */
  settled(id: string): void {
    this.#setAside.delete(id);
  }

  /** Calls `listener` with each report of the processors. */
  onProcessors(listener: (r: ProcessorsReport) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Why a pending batch waits, when it waits on a transaction processor. */
  setAsideReason(id: string): string | undefined {
    return this.#setAside.get(id);
  }

  /** Pending batches that wait on a transaction processor. */
  get setAsideCount(): number {
    return this.#setAside.size;
  }

  /** A message of a client of the endpoint, or its departure. */
  client(m: ClientTraffic): void {
    if (this.#clientHandler) this.#clientHandler(m);
    else if (this.#clientEarly.length < MAX_EARLY_CLIENT_MESSAGES) this.#clientEarly.push(m);
  }

  /** Serves the endpoint's clients: their messages (those held first) go to `handler`. */
  onClientMessage(handler: (m: ClientTraffic) => void): void {
    this.#clientHandler = handler;
    for (const m of this.#clientEarly.splice(0)) handler(m);
  }
}
