/**
 * The settings table: each setting's flag, environment variable and help line (what
 * `cairn start --help` prints, src/config.ts's usage). loadConfig (src/config.ts) reads a
 * setting by its key here; its default and its checks are there (src/config/values.ts,
 * src/config/cluster.ts).
 */
export interface OptionSpec {
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
  stateCheckpointMiB: {
    flag: 'state-checkpoint-mib',
    env: 'CAIRN_STATE_CHECKPOINT_MIB',
    help: 'MiB of state records held in memory since the last checkpoint that start the next one before its block count (default: a quarter of --memory-budget, 64); bounds that memory and the replay of a restart',
  },
  memoryBudget: {
    flag: 'memory-budget',
    env: 'CAIRN_MEMORY_BUDGET',
    help: "memory for what grows with the chain and its use, in MiB (or with a unit: 512MiB, 1GiB): a quarter for state records between checkpoints, half for the ledger gateway's block JSON cache, an eighth for decoded blocks; past it they are written to disk or evicted (default 256)",
  },
  startScan: {
    flag: 'start-scan',
    env: 'CAIRN_START_SCAN',
    help: 'once the node serves, read every record of the data files in a separate process; a file that crashes it turns the node read-only (CORRUPT alarm): on|off (default on)',
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
  clusterCutQuietMs: {
    flag: 'cluster-cut-quiet-ms',
    env: 'CAIRN_CLUSTER_CUT_QUIET_MS',
    help: 'a cluster member: the block its envelope opened is cut once no envelope came for this many ms, 0 to 10000; longer makes larger blocks (less CPU per batch) and a later commit (default 40)',
  },
  clusterCutMaxMs: {
    flag: 'cluster-cut-max-ms',
    env: 'CAIRN_CLUSTER_CUT_MAX_MS',
    help: 'a cluster member: the block its envelope opened is cut this many ms after it opened at the latest, 1 to 10000, above --cluster-close-age-ms (default 100)',
  },
  clusterCloseAgeMs: {
    flag: 'cluster-close-age-ms',
    env: 'CAIRN_CLUSTER_CLOSE_AGE_MS',
    help: 'a cluster member: an envelope it appends closes the open block once that is this many ms old, 0 to 10000, below --cluster-cut-max-ms (default 60)',
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
