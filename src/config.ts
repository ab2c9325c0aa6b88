/**
 * One typed configuration, read once at start from flags and environment variables
 * (flags win), with defaults that run a node out of the box. Every listen address,
 * directory, key file and limit is settable both ways. The settings table (flags, variables,
 * help) is src/config/options.ts, the value parsers src/config/values.ts, a cluster member's
 * settings src/config/cluster.ts; this file reads them into one Config and prints the usage.
 */
import { availableParallelism } from 'node:os';
import { resolve, join } from 'node:path';
import { OPTIONS } from './config/options.js';
import { clusterConfig, type ClusterConfig } from './config/cluster.js';
import {
  ackDurability,
  componentBind,
  dataAuth,
  int,
  logFormatSetting,
  logLevel,
  metricsSetting,
  parseArgs,
  parseBind,
  sizeMiB,
  ConfigError,
  type Bind,
  type LogFormat,
  type LogLevel,
  type MetricsSetting,
} from './config/values.js';

export { OPTIONS } from './config/options.js';
export type { ClusterConfig } from './config/cluster.js';
export { ConfigError, isLoopback, parseBind, type Bind, type LogFormat, type LogLevel, type MetricsSetting } from './config/values.js';

export interface Config {
  dataDir: string;
  /** Where the ledger gateway listens. */
  ledgerBind: Bind;
  /** Where the node API listens. */
  nodeBind: Bind;
  /** Where the data API listens. */
  dataBind: Bind;
  adminKeysFile: string;
  /** Blocks carry at most this many batches (0 = no limit). */
  maxBatchesPerBlock: number;
  /** Minimum time between two blocks. 0 publishes as soon as batches are pending. */
  minBlockIntervalMs: number;
  /** Back-pressure: limit = multiplier × rolling average of batches per block. */
  queueMultiplier: number;
  /** Starting value of that rolling average. */
  queueInitialAverage: number;
  /**
   * Seconds a pending batch may wait for a dependency that is not committed, from its
   * acceptance (from the restart for batches found in the pending pool at start); then
   * it is INVALID, naming the missing dependency.
   */
  dependencyWaitSec: number;
  /** Blocks between state checkpoints (the Merkle records of a root written whole). */
  stateCheckpointBlocks: number;
  /** Merkle records a block writes for a checkpoint at most (a larger one is spread over the next blocks). */
  stateCheckpointChunk: number;
  /** MiB of Merkle records held in memory (made since the last checkpoint) that start a checkpoint before its block count. */
  stateCheckpointMiB: number;
  /** --memory-budget, in MiB: what grows with the chain and its use is held within it (its shares below and stateCheckpointMiB). */
  memoryBudgetMiB: number;
  /** Bytes of decoded blocks each block reader keeps (an eighth of the budget, shared by the gateway's and the component port's). */
  blockCacheBytes: number;
  /** Bytes of block JSON the ledger gateway keeps (half of the budget). */
  blockJsonCacheBytes: number;
  /** Blocks behind the head whose state `head=` still reads (0 = all not pruned). */
  stateHistoryBlocks: number;
  /**
   * Seconds a storage write may take to become durable; past it the write counts as failed
   * and raises the STALLED alarm (the node turns read-only and retries by itself).
   */
  storageStallSec: number;
  /**
   * Read every record of ledger.mdb and pending.mdb in a throw-away process before opening
   * them (src/store/scan.ts): a file whose page structure is damaged is refused at start
   * instead of crashing the node on the first read that reaches it. Costs a read of both files.
   */
  startScan: boolean;
  /**
   * When a 202 is sent: 'flush' once the pending-pool write is synced to disk (survives a
   * power loss), 'commit' once it is committed to the OS (survives kill -9 of the node,
   * not a power loss; lower submit latency).
   */
  ackDurability: 'flush' | 'commit';
  /** Verification workers in the piscina pool. */
  poolThreads: number;
  maxBodyBytes: number;
  /** Request-body bytes all three interfaces hold at once; over it a request gets 503. */
  maxInflightBodyBytes: number;
  /** Open websockets on the ledger gateway's /subscriptions; upgrades over it are refused (503). */
  wsMaxSockets: number;
  /** Bytes the node buffers for one websocket that does not read; over it the socket is closed. */
  wsMaxBufferedBytes: number;
  /** Node identity shown by the node API and registered by a cluster member; made from the node key and kept when unset. */
  nodeId: string | undefined;
  displayName: string | undefined;
  /** Peer endpoints reported by GET /peers and GET /status. */
  peers: string[];
  /** A cluster member (src/cluster): etcd, the chain key, TLS; null for a single node. */
  cluster: ClusterConfig | null;
  /** Endpoint this validator advertises. */
  endpoint: string;
  /** The component endpoint for transaction processors (ZeroMQ), or null when off. */
  componentBind: Bind | null;
  /** Built-in families run by transaction processors instead of natively. */
  externalFamilies: string[];
  /** Peers of the component endpoint subscribed to events at once. */
  componentSubscribers: number;
  /** Messages queued for one peer of the component endpoint before it is cut off. */
  componentQueue: number;
  /** Seconds a transaction processor may take to answer (a process request, or its pings) before it is set aside. */
  processorTimeoutSec: number;
  /** Batch-status waits (ClientBatchStatusRequest with `wait`) one peer of the component endpoint may hold at once. */
  componentWaitsPerClient: number;
  /** Batch-status waits all peers of the component endpoint may hold at once. */
  componentWaits: number;
  /** Circuits: the peer network listener (upstream framing over TCP). */
  networkBind: Bind;
  /** Shown by /status; default tcp://<network bind> (with the bound port). */
  advertisedEndpoint: string | undefined;
  /** The peering key (challenge authorization identity); created on first start. */
  peeringKeyFile: string;
  circuits: {
    heartbeatMs: number;
    retryMs: number;
    retryMaxMs: number;
    queueTtlMs: number;
    coordinatorTimeoutMs: number;
    participantTimeoutMs: number;
  };
  cors: boolean;
  accessTokenTtlSec: number;
  refreshTokenTtlSec: number;
  /** bcrypt cost of stored passwords (4..31). */
  bcryptCost: number;
  /** Base delay of the per-username failed-login backoff. */
  loginBackoffMs: number;
  /** Failed logins from one client address before that address is throttled too. */
  loginAddressFailures: number;
  /**
   * Password checks (bcrypt) running at once. bcrypt runs on the libuv thread pool that the
   * pending-pool writes behind every ledger acknowledgement also use: keep it below the
   * pool size (4) so a login flood cannot stall acknowledgements.
   */
  passwordChecks: number;
  /** Password checks that may wait for a slot; beyond that a login gets 503 with Retry-After. */
  passwordQueue: number;
  /** The data API asks for node API credentials (Biome, Cylinder, OAuth2) and permissions. */
  dataAuth: boolean;
  logLevel: LogLevel;
  /** Log lines as JSON, or readable; `auto` picks readable when stderr is a terminal. */
  logFormat: LogFormat;
  /** GET /metrics: off, on the ledger gateway's port, or on a listener of its own. */
  metrics: MetricsSetting;
  oauth: {
    issuer: string | undefined;
    clientId: string | undefined;
    clientSecret: string | undefined;
    /** Public URL of this node's OAuth callback; defaults to http://<node bind>/oauth/callback. */
    redirectUrl: string | undefined;
    /** Client URLs (origins or origin+path prefixes) the OAuth callback may redirect to; empty = loopback and own host. */
    allowedRedirects: string[];
    /** Age after which an OAuth session is re-checked with the provider. */
    recheckSec: number;
  };
}

/**
 * Batch-status waits held for the component endpoint's clients. One client may be upstream's
 * REST API process relaying the waits of all its own HTTP clients, so its bound is generous;
 * the total bounds what the HTTP thread holds and wakes for them (each wait is a timer, a
 * promise and its envelope, and a block that settles the batches they wait for answers them
 * all: about 0.1 ms of the HTTP thread's time each, paced by src/http/wait.ts).
 */
const DEFAULT_COMPONENT_WAITS_PER_CLIENT = 1000;
const DEFAULT_COMPONENT_WAITS = 4000;

export function loadConfig(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Config {
  const flags = parseArgs(argv);
  const known = new Set(Object.values(OPTIONS).map((o) => o.flag));
  for (const k of flags.keys()) if (!known.has(k) && k !== 'help') throw new ConfigError(`unknown option --${k}`);
  const get = (key: keyof typeof OPTIONS): string | undefined => {
    const o = OPTIONS[key]!;
    return flags.get(o.flag) ?? (env[o.env] !== undefined && env[o.env] !== '' ? env[o.env] : undefined);
  };
  const dataDir = resolve(get('dataDir') ?? './data');
  const bool = (v: string | undefined): boolean => v === 'true' || v === '1' || v === 'yes';
  const onOff = (v: string, what: string): boolean => {
    if (v === 'on' || v === 'off') return v === 'on';
    throw new ConfigError(`${what}: expected on or off, got "${v}"`);
  };
  const dataBind = parseBind(get('dataBind') ?? '127.0.0.1:8080', 'data bind');
  const budget = sizeMiB(get('memoryBudget') ?? '256', 'memory budget', 32);
  const MiB = 1024 * 1024;
  return {
    dataDir,
    ledgerBind: parseBind(get('ledgerBind') ?? '127.0.0.1:8008', 'ledger bind'),
    nodeBind: parseBind(get('nodeBind') ?? '127.0.0.1:8085', 'node bind'),
    dataBind,
    adminKeysFile: resolve(get('adminKeys') ?? join(dataDir, 'admin_keys')),
    maxBatchesPerBlock: int(get('maxBatchesPerBlock') ?? '1000', 'max batches per block', 0),
    minBlockIntervalMs: int(get('minBlockIntervalMs') ?? '0', 'min block interval', 0),
    queueMultiplier: int(get('queueMultiplier') ?? '10', 'queue multiplier', 1),
    queueInitialAverage: int(get('queueInitialAverage') ?? '30', 'queue initial average', 1),
    dependencyWaitSec: int(get('dependencyWaitSec') ?? '60', 'dependency wait', 1),
    stateCheckpointBlocks: int(get('stateCheckpointBlocks') ?? '256', 'state checkpoint blocks', 1),
    stateCheckpointChunk: int(get('stateCheckpointChunk') ?? '4096', 'state checkpoint chunk', 1),
    stateCheckpointMiB: int(get('stateCheckpointMiB') ?? String(Math.floor(budget / 4)), 'state checkpoint MiB', 1),
    memoryBudgetMiB: budget,
    blockCacheBytes: Math.floor((budget * MiB) / 16),
    blockJsonCacheBytes: Math.floor((budget * MiB) / 2),
    stateHistoryBlocks: int(get('stateHistoryBlocks') ?? '0', 'state history blocks', 0),
    storageStallSec: int(get('storageStallSec') ?? '60', 'storage stall', 1),
    startScan: onOff(get('startScan') ?? 'on', 'start scan'),
    ackDurability: ackDurability(get('ackDurability') ?? 'flush'),
    poolThreads: int(get('poolThreads') ?? String(Math.max(1, availableParallelism())), 'pool threads', 1),
    maxBodyBytes: int(get('maxBodyBytes') ?? String(10 * 1024 * 1024), 'max body bytes', 1024),
    maxInflightBodyBytes: int(get('maxInflightBodyBytes') ?? String(256 * 1024 * 1024), 'max inflight body bytes', 1024),
    wsMaxSockets: int(get('wsMaxSockets') ?? '1000', 'ws max sockets', 1),
    wsMaxBufferedBytes: int(get('wsMaxBufferedBytes') ?? String(1024 * 1024), 'ws max buffered bytes', 1024),
    nodeId: get('nodeId'),
    displayName: get('displayName'),
    peers: (get('peers') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    endpoint: get('endpoint') ?? '',
    cluster: clusterConfig(get),
    componentBind: componentBind(get('componentBind') ?? '127.0.0.1:4004'),
    componentSubscribers: int(get('componentSubscribers') ?? '1024', 'component subscribers', 1),
    componentQueue: int(get('componentQueue') ?? '1000', 'component queue', 1),
    processorTimeoutSec: int(get('processorTimeoutSec') ?? '30', 'processor timeout', 1),
    componentWaitsPerClient: int(get('componentWaitsPerClient') ?? String(DEFAULT_COMPONENT_WAITS_PER_CLIENT), 'component waits per client', 1),
    componentWaits: int(get('componentWaits') ?? String(DEFAULT_COMPONENT_WAITS), 'component waits', 1),
    externalFamilies: (get('externalFamilies') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    networkBind: parseBind(get('networkBind') ?? '127.0.0.1:8044', 'network bind'),
    advertisedEndpoint: get('advertisedEndpoint'),
    peeringKeyFile: resolve(get('peeringKey') ?? join(dataDir, 'keys', 'peering.priv')),
    circuits: {
      heartbeatMs: int(get('heartbeatMs') ?? '30000', 'heartbeat', 10),
      retryMs: int(get('peerRetryMs') ?? '10000', 'peer retry', 10),
      retryMaxMs: int(get('peerRetryMaxMs') ?? '300000', 'peer retry max', 10),
      queueTtlMs: int(get('peerQueueTtlMs') ?? '30000', 'peer queue ttl', 10),
      coordinatorTimeoutMs: int(get('adminTimeoutMs') ?? '30000', 'admin timeout', 10),
      participantTimeoutMs: int(get('adminParticipantTimeoutMs') ?? '60000', 'admin participant timeout', 10),
    },
    cors: bool(get('cors')),
    accessTokenTtlSec: int(get('accessTokenTtlSec') ?? '5400', 'access token ttl', 1),
    refreshTokenTtlSec: int(get('refreshTokenTtlSec') ?? '5184000', 'refresh token ttl', 1),
    bcryptCost: Math.min(31, int(get('bcryptCost') ?? '12', 'bcrypt cost', 4)),
    loginBackoffMs: int(get('loginBackoffMs') ?? '1000', 'login backoff', 1),
    loginAddressFailures: int(get('loginAddressFailures') ?? '20', 'login address failures', 1),
    passwordChecks: int(get('passwordChecks') ?? '1', 'password checks', 1),
    passwordQueue: int(get('passwordQueue') ?? '8', 'password queue', 0),
    dataAuth: dataAuth(get('dataAuth'), dataBind),
    logLevel: logLevel(get('logLevel') ?? 'info'),
    logFormat: logFormatSetting(get('logFormat') ?? 'auto'),
    metrics: metricsSetting(get('metrics') ?? 'off'),
    oauth: {
      issuer: get('oauthIssuer'),
      clientId: get('oauthClientId'),
      clientSecret: get('oauthClientSecret'),
      redirectUrl: get('oauthRedirectUrl'),
      allowedRedirects: (get('oauthAllowedRedirects') ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      recheckSec: int(get('oauthRecheckSec') ?? '3600', 'oauth recheck', 1),
    },
  };
}

export function usage(): string {
  const lines = Object.values(OPTIONS).map((o) => `  --${o.flag.padEnd(24)} ${o.env.padEnd(30)} ${o.help}`);
  return `usage: cairn start [options]      (also: npm start -- [options])\nRuns the node: the ledger gateway, the node API and the data API over one embedded validator.\nEvery option is a flag or an environment variable (flags win):\n  flag                       environment variable           meaning\n${lines.join('\n')}\n`;
}

/** Names of settings whose values are secrets: shown as set or not, never as themselves. */
const SECRET_KEY = /secret|password|passphrase|private|credential|token$/i;

/**
 * The effective configuration as plain data for the start-up log: binds as host:port, and
 * every secret (OAuth client secret, or any setting named like one) replaced by `[set]`.
 * Key files appear as paths only; their contents are never read here.
 */
export function describeConfig(config: Config): Record<string, unknown> {
  const walk = (v: unknown, key: string): unknown => {
    if (SECRET_KEY.test(key) && (typeof v === 'string' || v === undefined)) return v === undefined || v === '' ? undefined : '[set]';
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const o = v as Record<string, unknown>;
      if (typeof o.host === 'string' && typeof o.port === 'number' && Object.keys(o).length === 2) {
        return `${o.host.includes(':') ? `[${o.host}]` : o.host}:${o.port}`;
      }
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(o)) out[k] = walk(x, k);
      return out;
    }
    return v;
  };
  return walk(config, '') as Record<string, unknown>;
}
