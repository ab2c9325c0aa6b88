/**
 * The cluster log's retention, run by one member each round of its records (the live one
 * with the lowest node key): entries every live member has applied are deleted, the floor
 * written first (a member that was away and finds its position below it catches up from
 * blocks, log-follower.ts), and etcd's history below it compacted, so that etcd stays within
 * its quota; once in a while each etcd member is defragmented too.
 */
import type { Etcd3 } from 'etcd3';
import { log } from '../log.js';
import { FLOOR, LOG, etcdClient, etcdReason, type EtcdSettings } from './etcd.js';

/** How often the log is trimmed (ms). */
const RETAIN_EVERY_MS = 5_000;
/** Log keys deleted per transaction (etcd's --max-txn-ops is 128 by default). */
const DELETE_CHUNK = 128;
/**
 * How often the retaining member defragments each etcd member (ms): compaction frees
 * space inside etcd's file for reuse, defragmenting gives it back, one member at a time.
 */
const DEFRAG_EVERY_MS = 60 * 60_000;

export class Retention {
  #retainedAt = 0;
  #defraggedAt = Date.now();
  #floor = 0;

  constructor(
    private readonly client: Etcd3,
    /** This member's node key. */
    private readonly self: string,
    private readonly etcd: EtcdSettings,
    /** How often the retaining member defragments etcd (ms; DEFRAG_EVERY_MS unless set). */
    private readonly defragEveryMs: number | undefined,
  ) {}

  /**
   * Log retention, by one member (the live one with the lowest node key): entries every
   * live member has applied are deleted, the floor written first, and etcd's history below
   * it compacted.
   */
  async run(members: ReadonlyArray<{ live: boolean; public_key: string; applied: number }>): Promise<void> {
    const live = members.filter((m) => m.live);
    if (live.length === 0 || Date.now() - this.#retainedAt < RETAIN_EVERY_MS) return;
    const first = live.reduce((a, b) => (b.public_key < a.public_key ? b : a));
    if (first.public_key !== this.self) return;
    this.#retainedAt = Date.now();
    const floor = Math.min(...live.map((m) => m.applied));
    if (floor <= this.#floor) return;
    const stored = Number((await this.client.get(FLOOR).string()) ?? '0');
    if (floor > stored) await this.client.put(FLOOR).value(String(floor)).exec();
    const keys = await this.client.getAll().prefix(LOG).maxModRevision(String(floor)).keys();
    // One transaction per chunk: one etcd write (one Raft entry, one sync) deletes a chunk's keys.
    for (let i = 0; i < keys.length; i += DELETE_CHUNK)
      await this.client.kv.txn({ success: keys.slice(i, i + DELETE_CHUNK).map((k) => ({ request_delete_range: { key: Buffer.from(k) } })) });
    await this.client.kv.compact({ revision: String(floor) }).catch(() => undefined);
    this.#floor = floor;
    if (keys.length > 0) log.debug(`cluster log: ${keys.length} entries up to revision ${floor} deleted (every live member applied them)`);
    if (Date.now() - this.#defraggedAt >= (this.defragEveryMs ?? DEFRAG_EVERY_MS)) {
      this.#defraggedAt = Date.now();
      await this.#defragment();
    }
  }

  /** Each etcd member in turn (a member is busy while it defragments; the others serve). */
  async #defragment(): Promise<void> {
    for (const endpoint of this.etcd.endpoints) {
      const one = etcdClient({ ...this.etcd, endpoints: [endpoint] });
      try {
        await one.maintenance.defragment();
        log.info(`etcd member ${endpoint} defragmented`);
      } catch (err) {
        log.warn(`etcd member ${endpoint} not defragmented: ${etcdReason(err)}`);
      } finally {
        one.close();
      }
    }
  }
}
