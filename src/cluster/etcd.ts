/**
 * The cluster's records in etcd and the client that reaches them (npm `etcd3`, over
 * @grpc/grpc-js: etcd's own v3 gRPC API, with its leases, watches and transactions; one
 * client per process).
 *
 *   cairn/chain              the chain: its key and genesis block (written once, by `cairn cluster init`)
 *   cairn/nodes/<node key>   a member's registration (never deleted): id and ledger URL
 *   cairn/live/<node key>    a member that is up (on a lease): URL, applied log revision, head
 *   cairn/log/<node key>/<n> an envelope of verified batches (src/cluster/envelope.ts)
 *   cairn/attest/<node key>  a member's latest (height, block id, state root)
 *   cairn/floor              log entries at or below this revision may be deleted
 *   cairn/removed/<node key> a member taken out (`cairn cluster remove`): the removal, signed
 *                            by the chain key, written with its log entry (one revision)
 */
import { readFileSync } from 'node:fs';
import { ConsecutiveBreaker, ExponentialBackoff, circuitBreaker, handleWhen, isBrokenCircuitError, retry } from 'cockatiel';
import { Etcd3, isRecoverableError, type IOptions } from 'etcd3';
import { decodeRemoval } from './envelope.js';
export { parseEndpoints } from '../config/endpoints.js';

export const PREFIX = 'cairn/';
export const CHAIN_KEY = `${PREFIX}chain`;
export const NODES = `${PREFIX}nodes/`;
export const LIVE = `${PREFIX}live/`;
export const LOG = `${PREFIX}log/`;
export const ATTEST = `${PREFIX}attest/`;
export const REMOVED = `${PREFIX}removed/`;
/** The highest log revision whose entries may have been deleted (written before they are). */
export const FLOOR = `${PREFIX}floor`;

/**
 * Longest one try of an etcd request may take (no quorum, unreachable); it is tried three
 * times. Short, because a member that lost its leader holds a write until etcd's own
 * request timeout (5 s and two election timeouts): at 5 s here, a killed etcd leader paused
 * commits for 5 s in half the tests, at 2 s for 2.2 s at most (0.7 s typical).
 */
export const REQUEST_DEADLINE_MS = 2_000;
/**
 * A member that failed three requests in a row is passed over for this long (the client's
 * default, 5 s, kept every member out for 5 s after an etcd quorum came back).
 */
const HOST_PAUSE_MS = 1_000;

/** What `cairn cluster init` writes to CHAIN_KEY. */
export interface ChainRecord {
  /** The chain key's public key: every block is signed with it. */
  chainKey: string;
  /** Block 0 of the chain (a function of the chain key). */
  genesis: string;
  created: string;
  /**
   * Who checks batch signatures: 'trust' (the ingesting member; the others check its
   * envelope's signature) or 'all' (every member re-verifies every batch). Absent: trust.
   */
  verify?: VerifyMode;
}

export type VerifyMode = 'trust' | 'all';

/** A member as it registers (NODES) and as it is live (LIVE). */
export interface MemberRecord {
  nodeId: string;
  publicKey: string;
  ledgerUrl: string;
  /** LIVE only: the last log revision applied, and the head block. */
  applied?: number;
  height?: number;
  headId?: string;
}

export interface Attestation {
  height: number;
  blockId: string;
  stateRoot: string;
}

export interface EtcdSettings {
  endpoints: string[];
  /** PEM files for TLS with client certificates (all three, or none). */
  ca?: string | undefined;
  cert?: string | undefined;
  key?: string | undefined;
}

/** The etcd client: every unary request has a deadline; watches are streams and have none. */
export function etcdClient(s: EtcdSettings): Etcd3 {
  const opts: IOptions = {
    hosts: s.endpoints,
    dialTimeout: REQUEST_DEADLINE_MS,
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + REQUEST_DEADLINE_MS }),
    faultHandling: {
      host: () => circuitBreaker(handleWhen(isRecoverableError), { halfOpenAfter: HOST_PAUSE_MS, breaker: new ConsecutiveBreaker(3) }),
      // A request that met a failing member or only paused ones is tried again on the others, shortly after.
      global: retry(
        handleWhen((e) => isRecoverableError(e) || isBrokenCircuitError(e)),
        { maxAttempts: 3, backoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 1_000 }) },
      ),
    },
  };
  if (s.ca || s.cert || s.key) {
    if (!s.ca || !s.cert || !s.key) throw new Error('etcd TLS needs all of --cluster-etcd-ca, --cluster-etcd-cert and --cluster-etcd-key');
    opts.credentials = { rootCertificate: readFileSync(s.ca), certChain: readFileSync(s.cert), privateKey: readFileSync(s.key) };
  }
  return new Etcd3(opts);
}

/** A JSON object, or null for anything else (a value that does not parse, an array, null). */
function jsonObject(v: string): Record<string, unknown> | null {
  try {
    const o = JSON.parse(v) as unknown;
    return o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const optional = (v: unknown, type: 'number' | 'string'): boolean => v === undefined || typeof v === type;

/**
 * A registration or live record (NODES, LIVE), or null when the value is not one: garbage
 * another writer of etcd left beside the members' records is skipped by its readers, never
 * fatal to them.
 */
export function memberRecord(v: string): MemberRecord | null {
  const o = jsonObject(v);
  if (!o || typeof o.nodeId !== 'string' || typeof o.ledgerUrl !== 'string') return null;
  if (!optional(o.applied, 'number') || !optional(o.height, 'number') || !optional(o.headId, 'string')) return null;
  return o as unknown as MemberRecord;
}

/** An attestation (ATTEST), or null when the value is not one. */
export function attestation(v: string): Attestation | null {
  const o = jsonObject(v);
  if (!o || !Number.isSafeInteger(o.height) || typeof o.blockId !== 'string' || typeof o.stateRoot !== 'string') return null;
  return o as unknown as Attestation;
}

/** The chain record, or null when the cluster has none yet. */
export async function readChain(client: Etcd3): Promise<ChainRecord | null> {
  const v = await client.get(CHAIN_KEY).string();
  return v === null ? null : (JSON.parse(v) as ChainRecord);
}

/**
 * An etcd failure in our words, for a 503, a log line or a command's error: what is wrong
 * and, where it is the usual cause, what to do. The client's own text (gRPC status codes,
 * "Resolution note:", the circuit breaker's "Execution prevented because the circuit breaker
 * is open") never reaches a user; etcd's own errors keep their words ("etcdserver: mvcc:
 * required revision has been compacted" is matched on by the follower).
 */
export function etcdReason(err: unknown): string {
  if (isBrokenCircuitError(err))
    return 'no etcd endpoint is answering (each failed its last requests; it is asked again within a second): is etcd running, with a quorum of its members?';
  const raw = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim();
  const refused = /ECONNREFUSED ([^\s.]+(?:\.[^\s.]+)*:\d+|\[[^\]]+\]:\d+)/.exec(raw);
  if (refused) return `connection refused at ${refused[1]}: is etcd running there?`;
  const noHost = /(?:ENOTFOUND|EAI_AGAIN) ([^\s]+)|Name resolution failed for target (?:dns:)?(\S+)/.exec(raw);
  if (noHost) return `no such host: ${noHost[1] ?? noHost[2]}`;
  if (/DEADLINE_EXCEEDED|Deadline exceeded|ETIMEDOUT/.test(raw))
    return `no answer within ${REQUEST_DEADLINE_MS / 1000} s: etcd is unreachable, overloaded, or without a quorum`;
  if (/etcdserver: no leader/.test(raw)) return 'etcd has no leader: a quorum of its members is down';
  if (/etcdserver: request timed out/.test(raw)) return 'etcd did not commit the request in time: a quorum of its members may be down';
  if (/Received HTTP status code (\d+)/.test(raw))
    return `the URL answers, but not as etcd's client API (HTTP ${/Received HTTP status code (\d+)/.exec(raw)?.[1]}): give etcd's client URL`;
  if (/certificate|SSL|TLS|handshake/i.test(raw))
    return `the TLS connection to etcd failed (${raw.replace(/^\d+ [A-Z_]+: /, '').slice(0, 160)}): check the CA, certificate and key files`;
  if (/UNAVAILABLE/.test(raw)) return 'etcd is unreachable: is it running, and is this its client URL?';
  // Anything else: etcd's or the client's own words, without the gRPC status prefix and the empty notes.
  return raw
    .replace(/^\d+ [A-Z_]+: /, '')
    .replace(/\s*Resolution note:\s*$/, '')
    .slice(0, 200);
}

/** Whether a `cairn/removed/` value is a removal of `key` signed by the chain key (a forged or damaged one counts for nothing). */
export function isRemovalOf(value: Uint8Array, key: string, chainKey: string): boolean {
  try {
    return decodeRemoval(value, chainKey) === key;
  } catch {
    return false;
  }
}

/** Whether `key` was taken out of the cluster (`cairn cluster remove`). */
export async function wasRemoved(client: Etcd3, chainKey: string, key: string): Promise<boolean> {
  const value = (await client.get(`${REMOVED}${key}`).exec()).kvs[0]?.value;
  return value !== undefined && isRemovalOf(value, key, chainKey);
}
