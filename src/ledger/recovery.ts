/**
 * A ledger's fault state and its recovery, on the HTTP thread (src/ledger/ledger.ts owns
 * one). It keeps the ledger's committer client running: a storage fault (a failed or
 * stalled write, a committer thread that died) raises an alarm on the node's board
 * (src/store/alarms.ts), and the recovery runs by itself with a bounded back-off: it ends the
 * failed committer and starts a new one on the spare thread from the last durable block (the
 * start path: every acknowledged batch comes back from the pending pool), reopens an
 * environment that had a fatal error, probes the ack writer and the other stores, and clears
 * the recoverable alarms once they all take durable writes again. The process never exits
 * for it.
 */
import type { RootDatabase } from 'lmdb';
import { log } from '../log.js';
import { writeFailure } from '../store/errors.js';
import { StartupError } from '../store/lock.js';
import { STUCK, envPanicked, reopenEnv } from '../store/reopen.js';
import { ROOM_TO_CLEAR_BYTES, classifyInDir, freeBytes, type AlarmBoard, type AlarmKind } from '../store/alarms.js';
import type { CommitterFaultCode, CommitterOptions } from './protocol.js';
import type { LedgerDescription } from './description.js';
import type { AckWriter } from './ack-writer.js';
import { CommitterClient, spares, type CommitterHandlers, type CommitterReady } from './committer-client.js';

/** A start failure that means the stored data is damaged (a checksum, a state record, an LMDB page). */
const DAMAGED = /(?:Corrupt\w*Error): (.*)|corrupt record in .*|damaged page in .*|MDB_(?:CORRUPTED|PAGE_NOTFOUND|BAD_TXN|INVALID).*/;

/**
 * The refusal to start for a committer start failure that means the stored data is damaged
 * (a record the start needs failed its checksum; the committer names the error's class: the
 * state it rebuilds failed its checks too), naming it and what to do; null for another one.
 */
export function damagedStart(err: unknown, dataDir: string): StartupError | null {
  const m = err instanceof Error ? DAMAGED.exec(err.message) : null;
  if (!m) return null;
  return new StartupError(
    `the data directory ${dataDir} is damaged; the node will not start on it: ${m[1] ?? m[0]}\n` +
      `Stop here: restore the directory from a backup (ledger.mdb and pending.mdb together), and run \`cairn check --data-dir ${dataDir}\` to list every problem.`,
  );
}

/** Back-off between recovery attempts: doubling from the first, capped at the last (ms). */
const RECOVERY_FIRST_MS = 250;
const RECOVERY_MAX_MS = 15_000;
/** How long after the first committer starts the process's spare thread is started, at the earliest… */
const SPARE_AFTER_MS = 10_000;
/** …and once no ledger of the process committed a block for this long: the node is quiet. */
const SPARE_QUIET_MS = 2_000;
/**
 * Restarts of a committer thread that died for a reason other than storage, in a row
 * (without a block committed between): past it the COMMITTER alarm stays raised.
 */
const MAX_CRASH_RESTARTS = 5;
/** The alarms a successful recovery clears (a corrupt record stays until an operator clears it). */
const RECOVERABLE: readonly AlarmKind[] = ['NOSPACE', 'IO', 'STALLED', 'COMMITTER'];

/** What the recovery needs of its ledger. */
export interface RecoveryHost {
  readonly description: LedgerDescription;
  readonly dataDir: string;
  readonly stallMs: number;
  /**
   * This thread's handles on the main environment and on the pending pool's (null for a
   * ledger over a shared log, which has none), reopened after a fatal error (src/store/reopen.ts).
   */
  readonly db: RootDatabase;
  readonly pendingDb: RootDatabase<Buffer, number> | null;
  readonly writer: AckWriter;
  /** Other durable writes a recovery must see succeed (e.g. the node API's stores). */
  readonly probes: Array<() => Promise<void>>;
  readonly committerOptions: CommitterOptions;
  /** The handlers of a committer client of generation `generation`. */
  handlers(generation: number): CommitterHandlers;
  /** A new committer runs (after `handlers(generation)` were attached): its ready message. */
  restarted(ready: CommitterReady): void;
  closed(): boolean;
}

export class LedgerRecovery {
  /** The committer client: replaced by each restart. */
  client!: CommitterClient;
  /** Generation of the committer client: events of an earlier one are ignored. */
  generation = 0;
  /** The committer client is gone (its thread failed): a recovery starts a new one. */
  #committerDown = false;
  /** Leaves the process's spare thread (committer-client.ts: shared by the ledgers of the process); null before begin(). */
  #leaveSpare: (() => Promise<void>) | null = null;
  /** Starts the first spare once the node has run a while and is quiet (null once it ran, or closed). */
  #spareTimer: NodeJS.Timeout | null = null;
  #timer: NodeJS.Timeout | null = null;
  #recovering = false;
  #attempt = 0;
  /** Committer restarts in a row after a crash that was not a storage error. */
  #crashRestarts = 0;

  constructor(
    readonly alarms: AlarmBoard,
    private readonly host: RecoveryHost,
  ) {}

  /**
   * The first committer runs: the process's spare thread (one for all its ledgers) is started
   * for the next once this ledger has run SPARE_AFTER_MS and the process is quiet (no block on
   * any ledger for SPARE_QUIET_MS), so that loading its modules (0.6 s of CPU) competes neither
   * with the node's start nor with a load: a node loaded from its start (a bench) gets it when
   * the load pauses. A recovery before then starts a thread of its own, as it does when
   * another ledger's recovery took the spare.
   */
  begin(client: CommitterClient): void {
    this.client = client;
    this.#leaveSpare ??= spares.join();
    const started = Date.now();
    this.#spareTimer = setInterval(() => {
      const now = Date.now();
      if (now - started < SPARE_AFTER_MS || now - spares.lastBlockAt < SPARE_QUIET_MS) return;
      this.#stopSpareTimer();
      if (!this.host.closed()) spares.ensure();
    }, 1_000);
    this.#spareTimer.unref();
  }

  #stopSpareTimer(): void {
    if (this.#spareTimer) clearInterval(this.#spareTimer);
    this.#spareTimer = null;
  }

  /** A block was committed: the crashes in a row start again from zero. */
  blockCommitted(): void {
    this.#crashRestarts = 0;
    spares.blockCommitted();
  }

  /**
   * A fault found outside the storage layer's own paths (an unhandled error, a failed
   * integrity check of a read): raises its alarm (a storage error by its cause, else
   * COMMITTER) and starts a recovery.
   */
  markFaulty(reason: string, kind?: AlarmKind): void {
    const s = kind ? { kind, cause: reason } : (this.#classify({ message: reason }, 'ledger.mdb') ?? { kind: 'COMMITTER' as const, cause: reason });
    this.alarms.raise(s.kind, s.cause);
    if (s.kind !== 'CORRUPT') this.#schedule();
  }

  /** A storage operation of the HTTP thread failed: raises its alarm and starts a recovery. Returns the alarm's cause, or null for an error that is not a storage error. */
  storageFault(err: unknown, file: string): string | null {
    const s = this.#classify(err, file);
    if (!s) return null;
    this.alarms.raise(s.kind, s.cause);
    if (s.kind !== 'CORRUPT') this.#schedule();
    return s.cause;
  }

  committerFault(reason: string, code: CommitterFaultCode | 'THREAD_FAILED' | 'THREAD_EXITED', generation: number): void {
    if (this.host.closed() || generation !== this.generation || this.#committerDown) return;
    this.#committerDown = true;
    const file = code === 'PENDING_CLEANUP_FAILED' ? (this.host.description.pendingFile ?? 'pending.mdb') : 'ledger.mdb';
    const s = this.#classify({ message: reason }, file);
    if (s) this.alarms.raise(s.kind, s.cause);
    else {
      this.#crashRestarts++;
      this.alarms.raise('COMMITTER', reason);
    }
    log.error(`committer stopped (${code}): ${reason}`);
    this.#schedule();
  }

  /** Operator's "clear": clears the given alarms (all when none) and tries a recovery at once. */
  clearAlarms(kinds?: readonly AlarmKind[]): void {
    this.alarms.clear(kinds);
    this.#crashRestarts = 0;
    this.#attempt = 0;
    if (this.#committerDown || this.alarms.has()) this.#schedule();
  }

  #classify(err: unknown, file: string): { kind: AlarmKind; cause: string } | null {
    return classifyInDir(err, file, this.host.dataDir);
  }

  #schedule(delay = 0): void {
    if (this.host.closed() || this.#timer || this.#recovering) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#recover();
    }, delay);
  }

  /**
   * One recovery attempt: a new committer when the old one failed (it recovers from the
   * last durable block and probes the ledger file), then the probes of the other stores.
   * All good: the recoverable alarms clear. Else the next attempt waits twice as long.
   */
  async #recover(): Promise<void> {
    if (this.host.closed()) return;
    this.#recovering = true;
    try {
      // A broken environment (see #restartCommitter) is reopened only with the committer's
      // handle closed: a committer that has not failed yet (nothing to write) is replaced too.
      if (!this.#committerDown && this.#brokenEnvs().length) this.#committerDown = true;
      if (this.#committerDown) {
        if (this.#crashRestarts > MAX_CRASH_RESTARTS) {
          log.error(
            `the committer failed ${this.#crashRestarts} times in a row; the alarm stays raised until an operator clears it (cairn alarm clear)`,
          );
          return;
        }
        await this.#restartCommitter();
      }
      await this.host.writer.probe();
      for (const p of this.host.probes) await p();
      // A full disk clears with room to work in, not as soon as a few probe bytes fit in it
      // (else the node would flap between read-only and refusing its next real write).
      const free = freeBytes(this.host.dataDir);
      if (this.alarms.has('NOSPACE') && free < ROOM_TO_CLEAR_BYTES)
        throw new Error(`the disk is still full: ${free} bytes free, ${ROOM_TO_CLEAR_BYTES} needed to clear`);
      if (this.#committerDown) throw new Error('the committer failed again during the recovery');
      this.#attempt = 0;
      this.alarms.clear(RECOVERABLE);
    } catch (err) {
      const cause = (await writeFailure(err)).message;
      if (this.host.closed()) return;
      const s = this.#classify({ message: cause }, 'ledger.mdb');
      if (s) this.alarms.raise(s.kind, s.cause);
      this.#attempt++;
      const delay = Math.min(RECOVERY_MAX_MS, RECOVERY_FIRST_MS * 2 ** Math.min(this.#attempt, 16));
      log.warn(`recovery attempt ${this.#attempt} failed (${cause}); next in ${(delay / 1000).toFixed(1)} s`);
      this.#recovering = false;
      this.#schedule(delay);
      return;
    } finally {
      this.#recovering = false;
    }
  }

  /** The environments of this thread that had a fatal error (every transaction on them fails), with their file. */
  #brokenEnvs(): Array<[RootDatabase, string]> {
    const envs: Array<[RootDatabase, string]> = [[this.host.db, 'ledger.mdb']];
    if (this.host.pendingDb) envs.push([this.host.pendingDb, this.host.description.pendingFile ?? 'pending.mdb']);
    return envs.filter(([db]) => envPanicked(db));
  }

  /**
   * Ends the failed committer thread and starts a new one from the last durable block. A
   * failed committer stops at once (what it had in flight is redone from the pending pool), and
   * the new one starts on the spare thread without waiting for the old thread's end. If an
   * environment had a fatal error (a failed meta-page write: every transaction on it fails with
   * MDB_PANIC, in every thread), this thread's handle is reopened once the other threads, and
   * their handles, are gone (src/store/reopen.ts): the new committer then opens a sound one.
   */
  async #restartCommitter(): Promise<void> {
    const generation = ++this.generation;
    // Resolves once the old committer is done (a failed one at once, its external executor
    // closed); its thread ends a moment later, by itself.
    const old = this.client;
    await old.close(2_000);
    // Writes in progress settle first: the new committer reads the pool as they left it.
    await this.host.writer.drain(this.host.stallMs);
    const broken = this.#brokenEnvs();
    if (broken.length) {
      // A broken environment is reopened only once no thread holds it: the old committer's
      // thread, and the circuits' committer threads, which start again by their own recovery
      // once it is sound (src/scabbard/committer-link.ts).
      const gone = await old.ended(2_000);
      const others = broken.some(([db]) => db === this.host.db) ? await CommitterClient.endAll(this.host.dataDir) : true;
      // A thread that does not end holds the environment for good (writerStuck, src/store/write-errors.ts).
      if (!gone || !others) throw new Error(STUCK);
    }
    for (const [db, file] of broken) {
      await reopenEnv(db);
      log.warn(`the environment of ${file} had a fatal error (a failed meta-page write): reopened`);
    }
    // The spare thread has its modules loaded: the new committer starts in a fraction of the time.
    const spare = spares.take();
    const { client, ready } = await CommitterClient.start(
      { ...this.host.committerOptions, recovery: true },
      () => this.host.handlers(generation),
      spare,
    ).finally(() => {
      this.#stopSpareTimer();
      if (!this.host.closed()) spares.ensure();
    });
    if (this.host.closed()) {
      await client.close();
      return;
    }
    this.client = client;
    this.#committerDown = false;
    this.host.restarted(ready);
    log.info(`committer restarted at block ${ready.head.blockNum}; ${ready.pendingIds.length} pending batches recovered`);
  }

  /** No more recovery attempts (the ledger closes). */
  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#stopSpareTimer();
  }

  /** Closes the committer, and leaves the spare thread (the last ledger to leave ends it). */
  async close(): Promise<void> {
    this.stop();
    try {
      await this.client.close();
    } finally {
      await this.#leaveSpare?.();
    }
  }
}
