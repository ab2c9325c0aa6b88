/**
 * Wiring only: opens the data directory and the LMDB environment, loads or creates the
 * node's keys, starts the ledger engine (pool + committer thread) and the three HTTP
 * interfaces, and shuts them down in reverse order.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { createRequire } from 'node:module';
import type { RootDatabase } from 'lmdb';
import type { Config } from './config.js';
import { openEnv } from './store/db.js';
import { lockDataDir, StartupError } from './store/lock.js';
import { fsReason, makeDirs } from './store/dirs.js';
import { reopenable } from './store/reopen.js';
import { LEDGER_FILE, PENDING_FILE, preflight } from './store/preflight.js';
import { BackgroundScan } from './store/scan.js';
import { loadOrCreateKey } from './store/keys.js';
import { backend } from './crypto/secp256k1.js';
import type { Signer } from './crypto/secp256k1.js';
import { BodyBudget, HttpServer } from './http/server.js';
import { messageErrorReply } from './http/message-error.js';
import { ledgerErrorReplyFactory } from './ledger-api/errors.js';
import { log } from './log.js';
import { Ledger } from './ledger/ledger.js';
import { NODE_LEDGER } from './ledger/description.js';
import { registerLedgerApi } from './ledger-api/index.js';
import { ClientService } from './component/client-service.js';
import { registerExplorer } from './explorer/static.js';
import { registerNodeApi, type NodeApi } from './node-api/index.js';
import { registerDataApi, type DataApi } from './data-api/index.js';
import { startCircuits, type Circuits } from './circuits/index.js';
import { NodeMetrics } from './metrics.js';
import { checkPorts, footprint } from './startup.js';
import { AlarmBoard, withinTime } from './store/alarms.js';
import { nodeDbName } from './store/names.js';
import { writeGate } from './http/write-gate.js';
import { registerAlarmRoutes } from './node-api/alarm-routes.js';
import { openStore } from './store/checksum.js';
import type { ClusterMember } from './cluster/member.js';
import { nodeIdOf } from './node-api/status.js';

const require = createRequire(import.meta.url);
/** The package version; src/ and dist/src/ sit at different depths below package.json. */
export const VERSION: string = ((): string => {
  for (const p of ['../package.json', '../../package.json']) {
    try {
      return (require(p) as { version: string }).version;
    } catch {
      // try the next location
    }
  }
  return '0.0.0';
})();

export interface RunningNode {
  config: Config;
  db: RootDatabase;
  ledger: Ledger;
  /** The component endpoint's clients (event subscribers, client requests), when it is served. */
  clients: ClientService | null;
  nodeSigner: Signer;
  adminSigner: Signer;
  ports: { ledger: number; node: number; data: number; network: number };
  /** Port of the metrics listener (`--metrics host:port`), else undefined. */
  metricsPort?: number;
  close(): Promise<void>;
}

/** Writes the admin key's public key into the admin keys file on first start. */
function ensureAdminKeysFile(file: string, adminPublicKey: string): void {
  if (existsSync(file)) return;
  makeDirs(dirname(file));
  writeFileSync(file, `${adminPublicKey}\n`, { mode: 0o644 });
}

export async function startNode(config: Config): Promise<RunningNode> {
  const before = footprint(config);
  let made: string[];
  try {
    made = makeDirs(config.dataDir, 0o700);
  } catch (err) {
    throw new StartupError(`--data-dir: cannot make the data directory ${config.dataDir}: ${fsReason(err)}`);
  }
  // First of all: no other process may use this directory while we do.
  let lock: Awaited<ReturnType<typeof lockDataDir>>;
  try {
    lock = await lockDataDir(config.dataDir);
  } catch (err) {
    // In use by another node: nothing of its is touched; only a directory made here goes.
    if (made.length > 0) before.undo(made.slice(0, -1));
    if (err instanceof StartupError) throw err;
    throw new StartupError(`--data-dir: cannot use the data directory ${config.dataDir}: ${fsReason(err)}`);
  }
  try {
    return await startLocked(config, lock);
  } catch (err) {
    await lock.release();
    // A failed start leaves the directory as it found it (src/startup.ts).
    before.undo(made.slice(0, -1));
    throw err;
  }
}

async function startLocked(config: Config, lock: { release(): Promise<void> }): Promise<RunningNode> {
  // Every fixed port is free before anything is written: a failed first start leaves no keys or genesis.
  await checkPorts(config);
  const nodeKeyFile = join(config.dataDir, 'keys', 'validator.priv');
  const nodeSigner = loadOrCreateKey(nodeKeyFile);
  const adminSigner = loadOrCreateKey(join(config.dataDir, 'keys', 'admin.priv'));
  ensureAdminKeysFile(config.adminKeysFile, adminSigner.publicKey);
  log.info(`signature backend: ${backend === 'native' ? 'native libsecp256k1' : '@noble/secp256k1 (pure JS fallback)'}`);
  log.info(`validator public key ${nodeSigner.publicKey}`);

  // Damaged or mismatched files are refused here, with a message naming them. The handle can be
  // reopened under its stores: the recovery from a failed meta-page write needs it (src/store/reopen.ts).
  // The files as they were before this start: a new directory has nothing to scan.
  const existing = [LEDGER_FILE, PENDING_FILE].map((f) => join(config.dataDir, f)).filter((f) => existsSync(f));
  // The read of every record runs in the background once the node serves (BackgroundScan).
  const db = await preflight(config.dataDir, () => reopenable(() => openEnv(config.dataDir)));
  // Metrics off: no registry, no hooks anywhere (each hook call site skips on undefined).
  const metrics = config.metrics.mode === 'off' ? undefined : new NodeMetrics(VERSION);
  let ledger: Ledger;
  // A cluster member: the chain must be the cluster's, and the node registers before it appends.
  let member: ClusterMember | null = null;
  if (config.cluster) {
    try {
      // Loaded only for a member: a single node does not load the etcd client (gRPC: ~13 MiB).
      const { ClusterMember } = await import('./cluster/member.js');
      member = await ClusterMember.join(
        {
          etcd: { endpoints: config.cluster.etcd, ca: config.cluster.ca, cert: config.cluster.cert, key: config.cluster.key },
          chainKeyFile: config.cluster.chainKeyFile,
          // The id the node API stores and shows (src/node-api/status.ts): one id in the log, /status and the cluster view.
          nodeId: nodeIdOf(config, db, nodeSigner.publicKey),
          // Test hooks: a member whose state diverges; etcd defragmented every few seconds; a short
          // read-ahead; a first watch of the log that falls silent after some entries.
          diverge: process.env.CAIRN_TEST_CLUSTER_DIVERGE === '1',
          ...(process.env.CAIRN_TEST_CLUSTER_DEFRAG_MS ? { defragEveryMs: Number(process.env.CAIRN_TEST_CLUSTER_DEFRAG_MS) } : {}),
          ...(process.env.CAIRN_TEST_CLUSTER_READ_AHEAD ? { readAheadBlocks: Number(process.env.CAIRN_TEST_CLUSTER_READ_AHEAD) } : {}),
          ...(process.env.CAIRN_TEST_CLUSTER_DEAF_WATCH ? { deafWatchAfter: Number(process.env.CAIRN_TEST_CLUSTER_DEAF_WATCH) } : {}),
          verify: config.cluster.verify,
          appendSpacingMs: config.cluster.appendSpacingMs,
          linger: config.cluster.linger,
        },
        nodeSigner,
      );
    } catch (err) {
      await db.close();
      throw err;
    }
  }
  // The node's storage alarms: any failed write turns every interface read-only until it clears.
  const alarms = new AlarmBoard();
  const stallMs = config.storageStallSec * 1000;
  // The node API's and data API's writes go to the main environment from this thread: a
  // recovery must see one of those succeed too.
  const probeDb = openStore<number, string>(db, nodeDbName('meta'));
  const probeMain = async (): Promise<void> => {
    await withinTime(probeDb.put('storage_probe', Date.now()), stallMs, 'a node-store probe write');
    await withinTime(db.flushed, stallMs, 'a node-store probe sync');
  };
  try {
    // A cluster member runs no transaction processors: every member must execute alike.
    const component =
      config.componentBind && !member
        ? {
            bind: `${config.componentBind.host}:${config.componentBind.port}`,
            externalFamilies: config.externalFamilies,
            sendHighWaterMark: config.componentQueue,
            processTimeoutMs: config.processorTimeoutSec * 1000,
          }
        : undefined;
    ledger = await Ledger.start({
      config,
      db,
      nodeSigner,
      nodeKeyFile,
      description: NODE_LEDGER,
      metrics: metrics?.ingest,
      // The component endpoint is the committer's external executor (src/component/server.ts
      // registers it); with it, batches of families the node does not know wait for a processor.
      ...(component ? { plugins: { component }, anyFamily: true } : {}),
      alarms,
      probes: [probeMain],
      ...(member ? { log: member.sharedLog() } : {}),
    });
    member?.checkGenesis(ledger);
  } catch (err) {
    // (a ledger that started closes with the process: its committer thread is not waited for)
    await member?.close();
    await db.close();
    throw err;
  }

  // One bound on request bodies held at once, across the three interfaces.
  const bodyBudget = new BodyBudget(config.maxInflightBodyBytes);
  const ledgerServer = new HttpServer({
    name: 'ledger',
    maxBodyBytes: config.maxBodyBytes,
    bodyBudget,
    // The ledger gateway validates its ids itself (400 code 60/62, as upstream).
    boundParams: false,
    errorReply: ledgerErrorReplyFactory(),
    commonHeaders: config.cors ? { 'access-control-allow-origin': '*' } : undefined,
    observe: metrics?.http('ledger'),
    ...writeGate(ledger, 'ledger'),
  });
  let scan: BackgroundScan | null = null;
  const ledgerApi = registerLedgerApi(ledgerServer, { config, ledger, cluster: member, startScan: () => scan?.progress });
  // The component endpoint's clients (event subscribers, ZeroMQ client requests).
  const clients = ledger.componentEndpoint ? new ClientService(ledger, { maxSubscribers: config.componentSubscribers, config }) : null;
  registerExplorer(ledgerServer);
  metrics?.attach(ledger, db, config.dataDir);
  if (config.metrics.mode === 'on' && metrics) metrics.route(ledgerServer);
  const nodeServer = new HttpServer({
    name: 'node',
    maxBodyBytes: config.maxBodyBytes,
    bodyBudget,
    errorReply: messageErrorReply,
    observe: metrics?.http('node'),
    ...writeGate(ledger, 'node'),
  });
  const nodeApi: NodeApi = registerNodeApi(nodeServer, { config, db, nodeSigner, adminSigner, version: VERSION });
  let circuits: Circuits;
  try {
    circuits = await startCircuits({
      config,
      db,
      server: nodeServer,
      router: nodeApi.router,
      auth: nodeApi.auth,
      registry: nodeApi.registry,
      identity: nodeApi.identity,
      nodeKeyFile,
      verifyBodies: (bodies, families) => ledger.verifyBodies(bodies, families),
    });
  } catch (err) {
    await ledger.close();
    await db.close();
    throw err;
  }
  registerAlarmRoutes(nodeApi.router, ledger);
  nodeApi.mountAdded();
  const { host: nh } = config.networkBind;
  const networkEndpoint = `tcp://${nh.includes(':') ? `[${nh}]` : nh}:${circuits.port}`;
  nodeApi.network.network.push(networkEndpoint);
  nodeApi.network.advertised.push(config.advertisedEndpoint ?? networkEndpoint);
  const dataServer = new HttpServer({
    name: 'data',
    maxBodyBytes: config.maxBodyBytes,
    bodyBudget,
    errorReply: messageErrorReply,
    observe: metrics?.http('data'),
    ...writeGate(ledger, 'data'),
  });
  const dataApi: DataApi = registerDataApi(dataServer, {
    config,
    db,
    ledger,
    nodeSigner,
    auth: nodeApi.auth,
    services: (id) => circuits.services.resolve(id),
  });

  const servers: HttpServer[] = [];
  let ports: Omit<RunningNode['ports'], 'network'>;
  let metricsPort: number | undefined;
  try {
    ports = {
      ledger: await ledgerServer.listen(config.ledgerBind.host, config.ledgerBind.port),
      node: await nodeServer.listen(config.nodeBind.host, config.nodeBind.port),
      data: await dataServer.listen(config.dataBind.host, config.dataBind.port),
    };
    servers.push(ledgerServer, nodeServer, dataServer);
    if (config.metrics.mode === 'listen' && metrics) metricsPort = await metrics.listen(config.metrics.bind);
  } catch (err) {
    await Promise.all([ledgerServer.close(0), nodeServer.close(0), dataServer.close(0)]);
    await metrics?.close();
    await circuits.close();
    await ledger.close();
    await member?.close();
    await db.close();
    throw err;
  }
  // A damaged page structure found by the scan: read-only with a CORRUPT alarm (it stays
  // raised until an operator clears it, after a restore).
  // (Test hook: a reader script of the test's, one that crashes as LMDB does on a damaged page.)
  const scanScript = process.env.CAIRN_TEST_SCAN_SCRIPT;
  if (config.startScan && existing.length)
    scan = new BackgroundScan(existing, (cause) => ledger.markFaulty(cause, 'CORRUPT'), scanScript ? { script: scanScript } : {});
  if (member) {
    const h = config.ledgerBind.host;
    await member.begin(ledger, config.cluster?.advertise ?? `http://${h.includes(':') ? `[${h}]` : h}:${ports.ledger}`);
  }
  // Test helpers and benchmarks find the ports in this line (its text or, in JSON, `ports`).
  log.fields(
    'info',
    { ports: { ...ports, network: circuits.port } },
    `ledger gateway (C) on ${config.ledgerBind.host}:${ports.ledger}, node (A) on ${config.nodeBind.host}:${ports.node}, data (B) on ${config.dataBind.host}:${ports.data}, peer network on ${nh}:${circuits.port}` +
      `${ledger.componentEndpoint ? `, transaction processors on ${ledger.componentEndpoint}` : ''}`,
  );
  if (config.metrics.mode === 'on') log.info(`metrics: GET /metrics on the ledger gateway, ${config.ledgerBind.host}:${ports.ledger}`);
  if (metricsPort !== undefined)
    log.info(`metrics: GET /metrics on ${config.metrics.mode === 'listen' ? config.metrics.bind.host : ''}:${metricsPort}`);

  let closed = false;
  return {
    config,
    db,
    ledger,
    clients,
    nodeSigner,
    adminSigner,
    ports: { ...ports, network: circuits.port },
    metricsPort,
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      scan?.stop();
      ledgerApi.close();
      clients?.close();
      await Promise.all(servers.map((s) => s.close()));
      await metrics?.close();
      await circuits.close();
      await nodeApi.close();
      await dataApi.close();
      await ledger.close();
      await member?.close();
      await db.close();
      await lock.release();
    },
  };
}
