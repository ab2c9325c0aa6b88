/**
 * The HTTP thread's link to a circuit ledger's committer thread: starts it, passes messages
 * to it, and when it stops (a failed or stalled write, the thread died) starts a new one from
 * the durable head, with a back-off that doubles from 250 ms to 15 s. The events of a thread
 * that was replaced are not passed on.
 */
import { log } from '../log.js';
import { CommitterClient } from '../ledger/committer-client.js';
import type { BlockEvent, CircuitCommitterOptions, CommitterOptions, RoundSummary, ToCommitter } from '../ledger/protocol.js';

export interface LinkHandlers {
  onBlock(e: BlockEvent): void;
  onRound(m: RoundSummary | { type: 'dropped'; id: string }): void;
  /** The thread stopped: `reason` says why; a new one is being started. */
  onLost(reason: string): void;
  /** A new thread runs (after `onLost`). */
  onRestarted(): void;
}

const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 15_000;

export class CommitterLink {
  #client: CommitterClient | null = null;
  #gen = 0;
  #closed = false;

  constructor(
    private readonly opts: Omit<CommitterOptions, 'circuit' | 'recovery'> & { circuit: CircuitCommitterOptions },
    private readonly h: LinkHandlers,
    private readonly label: string,
  ) {}

  /** Starts the thread; resolves once it has recovered (its head is durable). */
  async start(recovery = false): Promise<void> {
    const gen = ++this.#gen;
    const { client } = await CommitterClient.start({ ...this.opts, recovery }, () => ({
      onBlock: (e) => gen === this.#gen && this.h.onBlock(e),
      onRound: (m) => gen === this.#gen && this.h.onRound(m),
      onFault: (reason) => gen === this.#gen && this.#lost(reason),
    }));
    this.#client = client;
  }

  tell(m: ToCommitter): void {
    if (!this.#closed) this.#client?.tell(m);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#gen++;
    await this.#client?.close();
  }

  #lost(reason: string): void {
    if (this.#closed) return;
    this.#gen++;
    const old = this.#client;
    this.#client = null;
    log.error(`${this.label}: ${reason}; starting a new committer thread`);
    this.h.onLost(reason);
    let wait = FIRST_RETRY_MS;
    const retry = (): void => {
      const t = setTimeout(() => {
        void (old?.close(2000) ?? Promise.resolve())
          .then(() => (this.#closed ? undefined : this.start(true)))
          .then(
            () => {
              if (this.#closed) return void this.#client?.close();
              this.h.onRestarted();
            },
            (err: unknown) => {
              log.error(`${this.label}: the committer thread did not start again: ${(err as Error).message}`);
              wait = Math.min(MAX_RETRY_MS, wait * 2);
              if (!this.#closed) retry();
            },
          );
      }, wait);
      t.unref();
    };
    retry();
  }
}
