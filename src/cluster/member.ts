/**
 * This node as a member of a cluster: it checks at start that the cluster's chain is the
 * one its chain key signs, registers its node key (before it can append anything), opens
 * its link to the log (link.ts), keeps a lease-bound record of itself up (URL, applied log
 * revision, head), reads the other members' records for /peers and /status, and each round
 * hands the members' attestations to attestations.ts (a member whose block at a height
 * differs from another's raises the DIVERGED alarm, which stops its acknowledgements) and
 * runs the log's retention (retention.ts).
 */
import { existsSync } from 'node:fs';
import type { Etcd3, Lease } from 'etcd3';
import { log } from '../log.js';
import type { Signer } from '../crypto/secp256k1.js';
import type { Ledger, SharedLog } from '../ledger/ledger.js';
import { loadOrCreateKey } from '../store/keys.js';
import { StartupError } from '../store/lock.js';
import { APPEND_SPACING_MS, ClusterLink } from './link.js';
import { blockLinger, type BlockLinger } from './block-cutter.js';
import { Attestations } from './attestations.js';
import { Retention } from './retention.js';
import {
  ATTEST,
  LIVE,
  NODES,
  attestation,
  etcdClient,
  etcdReason,
  memberRecord,
  readChain,
  wasRemoved,
  type ChainRecord,
  type EtcdSettings,
  type MemberRecord,
  type VerifyMode,
} from './etcd.js';

/** Seconds a member's live record outlives its last renewal. */
const LEASE_TTL_S = 5;
/** How often a member refreshes its record and reads the others' (ms). */
const TICK_MS = 1_000;
/** Keys of skipped records remembered (each is said once): garbage under many keys costs this much memory, no more. */
const SKIPPED_SAID_MAX = 1_000;

export interface MemberSettings {
  etcd: EtcdSettings;
  chainKeyFile: string;
  nodeId: string;
  /** Test hook: this member's state diverges (src/cluster/log-source.ts). */
  diverge?: boolean;
  /** How often the retaining member defragments etcd (ms; default an hour). */
  defragEveryMs?: number;
  /** Test hook: how far the follower reads ahead of the committer, in blocks (src/cluster/log-follower.ts). */
  readAheadBlocks?: number;
  /** Test hook: the follower's first watch falls silent after this many entries (src/cluster/log-follower.ts). */
  deafWatchAfter?: number;
  /** Spacing of this member's appends per appending member (ms; src/cluster/acknowledgements.ts APPEND_SPACING_MS by default). */
  appendSpacingMs?: number;
  /** The block's linger where set (ms; src/cluster/block-cutter.ts BLOCK_LINGER for the rest). */
  linger?: Partial<BlockLinger>;
  /** The signature checks the operator asked for: must be the chain's. */
  verify?: VerifyMode | undefined;
}

/** A member as /status shows it (snake_case, as the gateway's other fields). */
export interface MemberView {
  node_id: string;
  public_key: string;
  ledger_url: string;
  live: boolean;
  applied: number;
  height: number;
}

export class ClusterMember {
  readonly client: Etcd3;
  readonly chain: ChainRecord;
  readonly #s: MemberSettings;
  /** The spacing of this member's appends (the setting, or the link's default): given to the link, shown in /status. */
  readonly #appendSpacingMs: number;
  /** The block's linger (the settings, or the block cutter's defaults): given to the link. */
  readonly #linger: BlockLinger;
  readonly #signer: Signer;
  #ledgerUrl = '';
  #ledger: Ledger | null = null;
  #link: ClusterLink | null = null;
  #lease: Lease | null = null;
  #timer: NodeJS.Timeout | null = null;
  #members: MemberView[] = [];
  readonly #attestations: Attestations;
  readonly #retention: Retention;
  /** Records skipped because they are not records (said once each; forgotten past SKIPPED_SAID_MAX). */
  readonly #skippedSaid = new Set<string>();
  #closed = false;

  private constructor(s: MemberSettings, signer: Signer, client: Etcd3, chain: ChainRecord, linger: BlockLinger) {
    this.#s = s;
    this.#appendSpacingMs = s.appendSpacingMs ?? APPEND_SPACING_MS;
    this.#linger = linger;
    this.#signer = signer;
    this.client = client;
    this.chain = chain;
    this.#attestations = new Attestations(client, signer.publicKey);
    this.#retention = new Retention(client, signer.publicKey, s.etcd, s.defragEveryMs);
  }

  /**
   * Joins the cluster: the chain must exist and be signed by this chain key, and the node
   * registers before anything else (an envelope counts only after its signer registered).
   */
  static async join(s: MemberSettings, signer: Signer): Promise<ClusterMember> {
    if (!existsSync(s.chainKeyFile))
      throw new StartupError(
        `--chain-key: the chain key file ${s.chainKeyFile} does not exist: copy it from the member that ran \`cairn cluster init\` (CAIRN_CHAIN_KEY)`,
      );
    let linger: BlockLinger;
    try {
      linger = blockLinger(s.linger);
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
    const chainKey = loadOrCreateKey(s.chainKeyFile);
    const client = etcdClient(s.etcd);
    try {
      const chain = await readChain(client);
      if (chain === null)
        throw new StartupError(
          `the cluster at ${s.etcd.endpoints.join(',')} has no chain yet: run \`cairn cluster init --etcd ${s.etcd.endpoints.join(',')} --chain-key ${s.chainKeyFile}\` first`,
        );
      if (chain.chainKey !== chainKey.publicKey)
        throw new StartupError(
          `the chain key in ${s.chainKeyFile} (${chainKey.publicKey.slice(0, 16)}…) is not this cluster's (${chain.chainKey.slice(0, 16)}…): refusing to join`,
        );
      if (await wasRemoved(client, chain.chainKey, signer.publicKey))
        throw new StartupError(
          `this node's key (${signer.publicKey.slice(0, 16)}…) was removed from the cluster (cairn cluster remove): a removed member does not come back; ` +
            'start a node on a new data directory (a new key) instead',
        );
      const mode = chain.verify ?? 'trust';
      if (s.verify !== undefined && s.verify !== mode)
        throw new StartupError(
          `this cluster's members check signatures by --verify ${mode} (set at cairn cluster init), not ${s.verify}: refusing to join`,
        );
      const m = new ClusterMember(s, signer, client, chain, linger);
      await m.#register();
      return m;
    } catch (err) {
      client.close();
      if (err instanceof StartupError) throw err;
      throw new StartupError(
        `--cluster-etcd: the cluster's etcd at ${s.etcd.endpoints.join(',')} did not answer: ${etcdReason(err)} (start etcd, or point the node at it with --cluster-etcd URL[,URL…] or CAIRN_CLUSTER_ETCD)`,
      );
    }
  }

  async #register(): Promise<void> {
    const rec: MemberRecord = { nodeId: this.#s.nodeId, publicKey: this.#signer.publicKey, ledgerUrl: this.#ledgerUrl };
    await this.client.put(`${NODES}${this.#signer.publicKey}`).value(JSON.stringify(rec)).exec();
  }

  /** The ledger's shared log: this member's link to it. */
  sharedLog(): SharedLog {
    return {
      committer: { chainKeyFile: this.#s.chainKeyFile, ...(this.#s.diverge ? { diverge: true } : {}) },
      open: (h) => {
        this.#link = new ClusterLink({
          client: this.client,
          signer: this.#signer,
          nextRev: h.nextRev,
          tell: h.tell,
          refusal: h.refusal,
          chainKey: this.chain.chainKey,
          verify: this.chain.verify === 'all' ? h.verify : null,
          peers: () => this.peers(),
          ...(this.#s.readAheadBlocks ? { readAheadBlocks: this.#s.readAheadBlocks } : {}),
          ...(this.#s.deafWatchAfter !== undefined ? { deafWatchAfter: this.#s.deafWatchAfter } : {}),
          appendSpacingMs: this.#appendSpacingMs,
          linger: this.#linger,
          head: h.head,
          diverged: (cause) => {
            log.error(`this member's chain diverged from the cluster's: ${cause}`);
            h.fault(`chain diverged: ${cause}`, 'DIVERGED');
          },
        });
        return this.#link;
      },
    };
  }

  /** The ledger's genesis block must be the cluster's (checked before the node listens). */
  checkGenesis(ledger: Ledger): void {
    const genesis = ledger.query.blockId(0);
    if (genesis !== this.chain.genesis)
      throw new StartupError(
        `this data directory's genesis block (${String(genesis).slice(0, 16)}…) is not the cluster's (${this.chain.genesis.slice(0, 16)}…): ` +
          'a member starts on its own empty data directory or one of this cluster',
      );
  }

  /** The node listens: its records start (URL, position, attestations). */
  async begin(ledger: Ledger, ledgerUrl: string): Promise<void> {
    this.#ledger = ledger;
    this.#ledgerUrl = ledgerUrl;
    await this.#register();
    ledger.onBlock((e) => {
      if (e.head) this.#checkOwn();
    });
    await this.#tick();
    this.#timer = setInterval(() => void this.#tick(), TICK_MS);
    this.#timer.unref();
  }

  /** One round of the member's records: its live record and attestation out, the others' in. */
  async #tick(): Promise<void> {
    if (this.#closed || !this.#ledger) return;
    try {
      const head = this.#ledger.head;
      const pos = this.#link?.position ?? { durable: 0 };
      const me: MemberRecord = {
        nodeId: this.#s.nodeId,
        publicKey: this.#signer.publicKey,
        ledgerUrl: this.#ledgerUrl,
        // Durable, not merely applied: the retention deletes the log up to the lowest one, and a
        // member that restarts reads the log from there.
        applied: pos.durable,
        height: head.blockNum,
        headId: head.blockId,
      };
      if (!this.#lease) {
        const lease = this.client.lease(LEASE_TTL_S);
        lease.on('lost', () => {
          if (this.#lease === lease) this.#lease = null;
        });
        this.#lease = lease;
      }
      await this.#lease.put(`${LIVE}${this.#signer.publicKey}`).value(JSON.stringify(me)).exec();
      await this.#attestations.publish(head);
      const [registered, live, attest] = await Promise.all([
        this.client.getAll().prefix(NODES).strings(),
        this.client.getAll().prefix(LIVE).strings(),
        this.client.getAll().prefix(ATTEST).strings(),
      ]);
      const views: MemberView[] = [];
      const removed = this.#link?.removed ?? new Map<string, number>();
      for (const [k, v] of Object.entries(registered)) {
        const key = k.slice(NODES.length);
        // A removed member is no member: not listed, not a peer, not counted by the retention.
        if (removed.has(key)) continue;
        // A value that is no registration is skipped: one that stopped this round stopped every
        // round, the retention and the attestations' checks with them.
        const r = memberRecord(v);
        if (!r) {
          this.#skipped(k);
          continue;
        }
        const l = live[`${LIVE}${key}`];
        const lr = l ? memberRecord(l) : null;
        views.push({
          node_id: r.nodeId,
          public_key: key,
          ledger_url: lr?.ledgerUrl ?? r.ledgerUrl,
          live: lr !== null,
          applied: lr?.applied ?? 0,
          height: lr?.height ?? -1,
        });
      }
      this.#members = views.sort((a, b) => a.node_id.localeCompare(b.node_id));
      for (const [k, v] of Object.entries(attest)) {
        const key = k.slice(ATTEST.length);
        // Only a registered member's attestation counts: records under other keys would outvote the members.
        if (key === this.#signer.publicKey || removed.has(key) || registered[`${NODES}${key}`] === undefined) continue;
        const a = attestation(v);
        if (a) this.#attestations.note(key, a);
        else this.#skipped(k);
      }
      this.#checkOwn();
      await this.#retention.run(this.#members);
    } catch (err) {
      if (!this.#closed) log.debug(`cluster records not refreshed: ${etcdReason(err)}`);
    }
  }

  /** A record under the cluster's prefix that is not one: skipped, said once. */
  #skipped(key: string): void {
    if (this.#skippedSaid.has(key)) return;
    if (this.#skippedSaid.size >= SKIPPED_SAID_MAX) this.#skippedSaid.clear();
    this.#skippedSaid.add(key);
    log.warn(`cluster record ${key.slice(0, 120)} is not a record of its kind: skipped`);
  }

  /** Compares the others' attestations at heights this member has reached with its own blocks. */
  #checkOwn(): void {
    if (this.#ledger) this.#attestations.check(this.#ledger);
  }

  /** The other live members' ledger URLs. */
  peers(): string[] {
    return this.#members.filter((m) => m.live && m.public_key !== this.#signer.publicKey && m.ledger_url).map((m) => m.ledger_url);
  }

  /** The cluster as this member sees it, for /status. */
  view(): {
    node_id: string;
    members: MemberView[];
    log: { applied: number; seen: number; lag: number; append_spacing_ms: number };
  } {
    const { applied, seen } = this.#link?.position ?? { applied: 0, seen: 0 };
    return {
      node_id: this.#s.nodeId,
      members: this.#members,
      // The fields /status shows (the link's position also names its durable revision, for the live record).
      log: { applied, seen, lag: Math.max(0, seen - applied), append_spacing_ms: this.#appendSpacingMs },
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#lease?.revoke().catch(() => undefined);
    this.client.close();
  }
}
