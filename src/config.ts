/**
 * One typed configuration, read once at start from flags and environment variables
 * (flags win), with defaults that run a node out of the box. Every listen address,
 * directory, key file and limit is settable both ways.
 */
import { availableParallelism } from 'node:os';
import { resolve, join } from 'node:path';
import { parseEndpoints } from './cluster/endpoints.js';

export interface Bind {
  host: string;
  port: number;
}

export interface ClusterConfig {
  /** etcd client URLs. */
  etcd: string[];
  chainKeyFile: string;
  /** PEM files of etcd TLS with client certificates. */
  ca: string | undefined;
  cert: string | undefined;
  key: string | undefined;
  /** The ledger gateway URL the other members and /peers show (default http://<ledger bind>). */
  advertise: string | undefined;
  /** Who checks batch signatures, when set: it must be the chain's (cairn cluster init --verify). */
  verify: 'trust' | 'all' | undefined;
  /** This member's appends start at least this many ms apart per appending member; unset: src/cluster/link.ts's default. */
  appendSpacingMs: number | undefined;
}

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
  logFormat: 'auto' | 'json' | 'pretty';
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

/** `--metrics`: off (default), `on` (GET /metrics on the ledger port) or its own host:port. */
export type MetricsSetting = { mode: 'off' } | { mode: 'on' } | { mode: 'listen'; bind: Bind };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

/**
 * Batch-status waits held for the component endpoint's clients. One client may be upstream's
 * REST API process relaying the waits of all its own HTTP clients, so its bound is generous;
 * the total bounds what the HTTP thread holds and wakes for them (each wait is a timer, a
 * promise and its envelope, and a block that settles the batches they wait for answers them
 * all: about 0.1 ms of the HTTP thread's time each, paced by src/http/wait.ts).
 */
const DEFAULT_COMPONENT_WAITS_PER_CLIENT = 1000;
const DEFAULT_COMPONENT_WAITS = 4000;

interface OptionSpec {
  flag: string;
  env: string;
  help: string;
}

export const OPTIONS: Record<string, OptionSpec> = {
  dataDir: { flag: 'data-dir', env: 'CAIRN_DATA_DIR', help: 'data directory (default ./data)' },
  ledgerBind: { flag: 'ledger-bind', env: 'CAIRN_LEDGER_BIND', help: 'ledger gateway host:port (default 127.0.0.1:8008)' },
  nodeBind: { flag: 'node-bind', env: 'CAIRN_NODE_BIND', help: 'node API host:port (default 127.0.0.1:8085)' },
  dataBind: { flag: 'data-bind', env: 'CAIRN_DATA_BIND', help: 'data API host:port (default 127.0.0.1:8080)' },
  adminKeys: { flag: 'admin-keys', env: 'CAIRN_ADMIN_KEYS', help: 'admin public keys file (default <data dir>/admin_keys)' },
  maxBatchesPerBlock: { flag: 'max-batches-per-block', env: 'CAIRN_MAX_BATCHES_PER_BLOCK', help: 'batches per block, 0 = no limit (default 1000)' },
  minBlockIntervalMs: { flag: 'min-block-interval-ms', env: 'CAIRN_MIN_BLOCK_INTERVAL_MS', help: 'minimum ms between blocks (default 0)' },
  queueMultiplier: { flag: 'queue-multiplier', env: 'CAIRN_QUEUE_MULTIPLIER', help: 'back-pressure multiplier (default 10)' },
  queueInitialAverage: { flag: 'queue-initial-average', env: 'CAIRN_QUEUE_INITIAL_AVERAGE', help: 'initial batches-per-block average (default 30)' },
  dependencyWaitSec: { flag: 'dependency-wait', env: 'CAIRN_DEPENDENCY_WAIT', help: 's a batch may wait for a missing dependency (default 60)' },
  stateCheckpointBlocks: {
    flag: 'state-checkpoint-blocks',
    env: 'CAIRN_STATE_CHECKPOINT_BLOCKS',
    help: 'blocks between state checkpoints (default 256)',
  },
  stateCheckpointChunk: {
    flag: 'state-checkpoint-chunk',
    env: 'CAIRN_STATE_CHECKPOINT_CHUNK',
    help: 'Merkle records a block writes for a state checkpoint at most; a larger one is spread over the next blocks (default 4096)',
  },
  startScan: {
    flag: 'start-scan',
    env: 'CAIRN_START_SCAN',
    help: 'at start, read every record of the data files in a separate process and refuse a file that crashes it: on|off (default on)',
  },
  storageStallSec: {
    flag: 'storage-stall',
    env: 'CAIRN_STORAGE_STALL',
    help: 's a storage write may take to become durable before it raises the STALLED alarm (default 60)',
  },
  stateHistoryBlocks: {
    flag: 'state-history-blocks',
    env: 'CAIRN_STATE_HISTORY_BLOCKS',
    help: 'blocks behind the head whose state head= reads, 0 = all (default 0)',
  },
  ackDurability: { flag: 'ack-durability', env: 'CAIRN_ACK_DURABILITY', help: "202 after 'flush' (fsync, default) or 'commit'" },
  poolThreads: { flag: 'pool-threads', env: 'CAIRN_POOL_THREADS', help: 'verification workers (default: cores)' },
  maxBodyBytes: { flag: 'max-body-bytes', env: 'CAIRN_MAX_BODY_BYTES', help: 'request body limit (default 10485760)' },
  maxInflightBodyBytes: {
    flag: 'max-inflight-body-bytes',
    env: 'CAIRN_MAX_INFLIGHT_BODY_BYTES',
    help: 'request-body bytes held at once, all interfaces (default 268435456)',
  },
  wsMaxSockets: { flag: 'ws-max-sockets', env: 'CAIRN_WS_MAX_SOCKETS', help: 'open /subscriptions websockets (default 1000)' },
  wsMaxBufferedBytes: {
    flag: 'ws-max-buffered-bytes',
    env: 'CAIRN_WS_MAX_BUFFERED_BYTES',
    help: 'bytes buffered per websocket before it is closed (default 1048576)',
  },
  nodeId: { flag: 'node-id', env: 'CAIRN_NODE_ID', help: 'node id (default made once from the node key: cairn-<hex>)' },
  displayName: { flag: 'display-name', env: 'CAIRN_DISPLAY_NAME', help: 'node display name' },
  peers: { flag: 'peers', env: 'CAIRN_PEERS', help: 'comma-separated peer endpoints' },
  endpoint: { flag: 'endpoint', env: 'CAIRN_ENDPOINT', help: 'advertised network endpoint' },
  clusterEtcd: {
    flag: 'cluster-etcd',
    env: 'CAIRN_CLUSTER_ETCD',
    help: 'etcd URLs (comma-separated): run as a member of that cluster (default: a single node)',
  },
  chainKey: {
    flag: 'chain-key',
    env: 'CAIRN_CHAIN_KEY',
    help: "the cluster's chain key file (cairn cluster init makes it); required with --cluster-etcd",
  },
  clusterEtcdCa: { flag: 'cluster-etcd-ca', env: 'CAIRN_CLUSTER_ETCD_CA', help: "CA certificate (PEM) of etcd's TLS" },
  clusterEtcdCert: { flag: 'cluster-etcd-cert', env: 'CAIRN_CLUSTER_ETCD_CERT', help: 'client certificate (PEM) for etcd' },
  clusterEtcdKey: { flag: 'cluster-etcd-key', env: 'CAIRN_CLUSTER_ETCD_KEY', help: 'client key (PEM) for etcd' },
  verify: {
    flag: 'verify',
    env: 'CAIRN_VERIFY',
    help: "a cluster member: trust (the ingesting member checks signatures) or all (every member re-verifies); must be the chain's (default: the chain's)",
  },
  clusterAppendSpacingMs: {
    flag: 'cluster-append-spacing-ms',
    env: 'CAIRN_CLUSTER_APPEND_SPACING_MS',
    help: 'a cluster member: its appends start at least this many ms apart for each member appending, 0 to 1000; larger packs more batches into each etcd write (less CPU per batch) and lengthens a submit under load (default 8)',
  },
  clusterAdvertise: {
    flag: 'cluster-advertise',
    env: 'CAIRN_CLUSTER_ADVERTISE',
    help: "this member's ledger gateway URL as the others list it (default http://<ledger bind>)",
  },
  componentBind: {
    flag: 'component-bind',
    env: 'CAIRN_COMPONENT_BIND',
    help: 'transaction processor endpoint host:port, or off (default 127.0.0.1:4004)',
  },
  externalFamilies: {
    flag: 'external-families',
    env: 'CAIRN_EXTERNAL_FAMILIES',
    help: 'comma-separated built-in families run by transaction processors (default none)',
  },
  componentSubscribers: {
    flag: 'component-subscribers',
    env: 'CAIRN_COMPONENT_SUBSCRIBERS',
    help: 'event subscribers on the component endpoint at once (default 1024)',
  },
  componentQueue: {
    flag: 'component-queue',
    env: 'CAIRN_COMPONENT_QUEUE',
    help: 'messages queued for one component endpoint peer before a client is cut off (default 1000)',
  },
  processorTimeoutSec: {
    flag: 'processor-timeout',
    env: 'CAIRN_PROCESSOR_TIMEOUT',
    help: 's a transaction processor may take to answer a transaction, or its pings, before it is set aside and its transactions wait (default 30)',
  },
  componentWaitsPerClient: {
    flag: 'component-waits-per-client',
    env: 'CAIRN_COMPONENT_WAITS_PER_CLIENT',
    help: 'batch-status waits one component endpoint client may hold at once; more answer INTERNAL_ERROR (default 1000)',
  },
  componentWaits: {
    flag: 'component-waits',
    env: 'CAIRN_COMPONENT_WAITS',
    help: 'batch-status waits all component endpoint clients may hold at once; more answer INTERNAL_ERROR (default 4000)',
  },
  networkBind: { flag: 'network-bind', env: 'CAIRN_NETWORK_BIND', help: 'circuit peer network host:port (default 127.0.0.1:8044)' },
  advertisedEndpoint: {
    flag: 'advertised-endpoint',
    env: 'CAIRN_ADVERTISED_ENDPOINT',
    help: 'peer endpoint shown in /status (default tcp://<network bind>)',
  },
  peeringKey: { flag: 'peering-key', env: 'CAIRN_PEERING_KEY', help: 'peering key file (default <data dir>/keys/peering.priv)' },
  heartbeatMs: { flag: 'heartbeat-ms', env: 'CAIRN_HEARTBEAT_MS', help: 'peer heartbeat interval in ms (default 30000)' },
  peerRetryMs: { flag: 'peer-retry-ms', env: 'CAIRN_PEER_RETRY_MS', help: 'first peer reconnect delay in ms, doubled per failure (default 10000)' },
  peerRetryMaxMs: { flag: 'peer-retry-max-ms', env: 'CAIRN_PEER_RETRY_MAX_MS', help: 'longest peer reconnect delay in ms (default 300000)' },
  peerQueueTtlMs: { flag: 'peer-queue-ttl-ms', env: 'CAIRN_PEER_QUEUE_TTL_MS', help: 'ms a message waits for a disconnected peer (default 30000)' },
  adminTimeoutMs: { flag: 'admin-timeout-ms', env: 'CAIRN_ADMIN_TIMEOUT_MS', help: 'circuit agreement coordinator timeout in ms (default 30000)' },
  adminParticipantTimeoutMs: {
    flag: 'admin-participant-timeout-ms',
    env: 'CAIRN_ADMIN_PARTICIPANT_TIMEOUT_MS',
    help: 'circuit agreement participant timeout in ms (default 60000)',
  },
  cors: { flag: 'cors', env: 'CAIRN_CORS', help: 'send CORS headers on the ledger gateway (default off)' },
  accessTokenTtlSec: { flag: 'access-token-ttl', env: 'CAIRN_ACCESS_TOKEN_TTL', help: 'access token lifetime in s (default 5400)' },
  refreshTokenTtlSec: { flag: 'refresh-token-ttl', env: 'CAIRN_REFRESH_TOKEN_TTL', help: 'refresh token lifetime in s (default 5184000)' },
  oauthIssuer: { flag: 'oauth-issuer', env: 'CAIRN_OAUTH_ISSUER', help: 'OpenID Connect issuer URL' },
  oauthClientId: { flag: 'oauth-client-id', env: 'CAIRN_OAUTH_CLIENT_ID', help: 'OAuth client id' },
  oauthClientSecret: { flag: 'oauth-client-secret', env: 'CAIRN_OAUTH_CLIENT_SECRET', help: 'OAuth client secret' },
  oauthRedirectUrl: { flag: 'oauth-redirect-url', env: 'CAIRN_OAUTH_REDIRECT_URL', help: 'OAuth callback URL of this node' },
  oauthAllowedRedirects: {
    flag: 'oauth-allowed-redirects',
    env: 'CAIRN_OAUTH_ALLOWED_REDIRECTS',
    help: 'comma-separated client URLs OAuth may return to',
  },
  oauthRecheckSec: { flag: 'oauth-recheck', env: 'CAIRN_OAUTH_RECHECK', help: 'seconds before an OAuth session is re-checked (default 3600)' },
  bcryptCost: { flag: 'bcrypt-cost', env: 'CAIRN_BCRYPT_COST', help: 'bcrypt cost of stored passwords (default 12)' },
  loginBackoffMs: { flag: 'login-backoff-ms', env: 'CAIRN_LOGIN_BACKOFF_MS', help: 'base delay after failed logins (default 1000)' },
  loginAddressFailures: {
    flag: 'login-address-failures',
    env: 'CAIRN_LOGIN_ADDRESS_FAILURES',
    help: 'failed logins per client address before it is throttled (default 20)',
  },
  passwordChecks: { flag: 'password-checks', env: 'CAIRN_PASSWORD_CHECKS', help: 'password checks (bcrypt) at once (default 1)' },
  passwordQueue: { flag: 'password-queue', env: 'CAIRN_PASSWORD_QUEUE', help: 'password checks waiting before 503 (default 8)' },
  dataAuth: { flag: 'data-auth', env: 'CAIRN_DATA_AUTH', help: 'credentials on the data API: on|off (default on unless it binds loopback)' },
  logLevel: { flag: 'log-level', env: 'CAIRN_LOG_LEVEL', help: 'debug|info|warn|error|silent (default info)' },
  logFormat: { flag: 'log-format', env: 'CAIRN_LOG_FORMAT', help: 'json|pretty|auto: log lines (default auto: pretty on a terminal)' },
  metrics: { flag: 'metrics', env: 'CAIRN_METRICS', help: 'GET /metrics: off|on (ledger port)|host:port (own listener) (default off)' },
};

export class ConfigError extends Error {}

function logFormatSetting(v: string): Config['logFormat'] {
  if (v !== 'auto' && v !== 'json' && v !== 'pretty') throw new ConfigError(`log format: expected auto, json or pretty, got "${v}"`);
  return v;
}

function metricsSetting(v: string): MetricsSetting {
  if (['off', 'false', '0', 'no'].includes(v)) return { mode: 'off' };
  if (['on', 'true', '1', 'yes'].includes(v)) return { mode: 'on' };
  if (!/:\d{1,5}$/.test(v)) throw new ConfigError(`metrics: expected off, on or host:port, got "${v}"`);
  return { mode: 'listen', bind: parseBind(v, 'metrics') };
}

function logLevel(v: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new ConfigError(`log level: expected one of ${LOG_LEVELS.join(', ')}, got "${v}"`);
  return v as LogLevel;
}

/** Loopback hosts: 127.0.0.0/8, ::1 and localhost. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** `on`/`off` (also true/false, 1/0, yes/no); unset: on unless the data API binds a loopback host. */
function dataAuth(v: string | undefined, dataBind: Bind): boolean {
  if (v === undefined) return !isLoopback(dataBind.host);
  if (['on', 'true', '1', 'yes'].includes(v)) return true;
  if (['off', 'false', '0', 'no'].includes(v)) return false;
  throw new ConfigError(`data auth: expected on or off, got "${v}"`);
}

function parseArgs(argv: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new ConfigError(`unexpected argument ${a}`);
    const eq = a.indexOf('=');
    if (eq > 0) out.set(a.slice(2, eq), a.slice(eq + 1));
    else if (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) out.set(a.slice(2), argv[++i]!);
    else out.set(a.slice(2), 'true');
  }
  return out;
}

export function parseBind(v: string, what: string): Bind {
  const m = /^(.+):(\d{1,5})$/.exec(v);
  if (!m || Number(m[2]) > 65535) throw new ConfigError(`${what}: expected host:port, got "${v}"`);
  return { host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port: Number(m[2]) };
}

/** The cluster settings, or null without --cluster-etcd (flags win over the environment, as everywhere). */
function clusterConfig(get: (key: keyof typeof OPTIONS) => string | undefined): ClusterConfig | null {
  const etcd = get('clusterEtcd');
  if (etcd === undefined) return null;
  const chainKey = get('chainKey');
  if (chainKey === undefined) throw new ConfigError('--cluster-etcd needs --chain-key FILE (CAIRN_CHAIN_KEY): the chain key cairn cluster init made');
  let endpoints: string[];
  try {
    endpoints = parseEndpoints(etcd);
  } catch (err) {
    throw new ConfigError(`cluster etcd: ${(err as Error).message}`);
  }
  const pem = (k: keyof typeof OPTIONS): string | undefined => {
    const v = get(k);
    return v === undefined ? undefined : resolve(v);
  };
  const advertise = get('clusterAdvertise');
  if (advertise !== undefined && !/^https?:\/\/[^/\s]+$/.test(advertise))
    throw new ConfigError(`cluster advertise: expected http(s)://host:port, got "${advertise}"`);
  const verify = get('verify');
  if (verify !== undefined && verify !== 'trust' && verify !== 'all') throw new ConfigError(`verify: expected trust or all, got "${verify}"`);
  const spacingText = get('clusterAppendSpacingMs');
  const spacing = spacingText === undefined ? undefined : int(spacingText, 'cluster append spacing', 0);
  if (spacing !== undefined && spacing > 1000) throw new ConfigError(`cluster append spacing: expected at most 1000 (ms), got "${spacing}"`);
  const c: ClusterConfig = {
    etcd: endpoints,
    chainKeyFile: resolve(chainKey),
    ca: pem('clusterEtcdCa'),
    cert: pem('clusterEtcdCert'),
    key: pem('clusterEtcdKey'),
    advertise,
    verify,
    appendSpacingMs: spacing,
  };
  if ((c.ca || c.cert || c.key) && !(c.ca && c.cert && c.key))
    throw new ConfigError('etcd TLS needs all three of --cluster-etcd-ca, --cluster-etcd-cert and --cluster-etcd-key');
  return c;
}

function componentBind(v: string): Bind | null {
  return v === 'off' ? null : parseBind(v, 'component bind');
}

function int(v: string, what: string, min: number): number {
  if (!/^\d+$/.test(v) || Number(v) < min) throw new ConfigError(`${what}: expected an integer >= ${min}, got "${v}"`);
  return Number(v);
}

function ackDurability(v: string): 'flush' | 'commit' {
  if (v !== 'flush' && v !== 'commit') throw new ConfigError(`ack durability: expected flush or commit, got "${v}"`);
  return v;
}

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
