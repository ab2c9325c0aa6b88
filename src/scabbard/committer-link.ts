/**
 * The HTTP thread's link to a circuit ledger's committer thread: starts it, passes messages
 * to it, and when it stops (a failed or stalled write, the thread died) starts a new one from
 * the durable head, with a back-off that doubles from 250 ms to 15 s. The events of a thread
 * that was replaced are not passed on.
 */
import { setFlagsFromString } from 'node:v8';
import { log } from '../log.js';
import { CommitterClient } from '../ledger/committer-client.js';
import type { BlockEvent, CommitterOptions, ToCommitter } from '../ledger/protocol.js';
import type { CircuitCommitterOptions, CircuitFromCommitter } from './protocol.js';

export interface LinkHandlers {
  onBlock(e: BlockEvent): void;
  onRound(m: CircuitFromCommitter): void;
  /** The thread stopped: `reason` says why; a new one is being started. */
  onLost(reason: string): void;
  /** A new thread runs (after `onLost`). */
  onRestarted(): void;
}

/**
 * Where the old generation of a thread started after this begins (MB). A circuit committer's
 * heap holds little (~15 MB live) but takes every round's decoded batches, which outlive a
 * scavenge while the round is agreed and written; from V8's default start its collector ran
 * a full mark-compact every ~300 ms under load (~0.7 s of CPU a node over a 12,000-batch
 * run), which is what this setting removes. It sets where the first full collection comes
 * (later collections size from the live heap), not memory taken up front; it applies to the
 * threads started from then on (committers, pools), not to the running main thread.
 */
const INITIAL_OLD_SPACE_MB = 64;
let heapFlagSet = false;

function setHeapFlag(): void {
  if (heapFlagSet) return;
  heapFlagSet = true;
  setFlagsFromString(`--initial-old-space-size=${INITIAL_OLD_SPACE_MB}`);
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
    setHeapFlag();
    const gen = ++this.#gen;
    const { client } = await CommitterClient.start({ ...this.opts, recovery }, () => ({
      onBlock: (e) => gen === this.#gen && this.h.onBlock(e),
      onPlugin: (m) => {
        if (gen === this.#gen && (m.type === 'summary' || m.type === 'dropped')) this.h.onRound(m);
      },
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
