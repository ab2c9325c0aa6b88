/**
 * `cairn cluster init|status|join|remove`: a network of nodes that share one chain through etcd.
 *   init    makes the chain key (FILE, mode 0600, when it does not exist) and writes the
 *           chain's record (key and genesis block) to etcd, exactly once (compare-and-set):
 *           again with the same key it does nothing (exit 0), with another it refuses (1).
 *   status  the chain and its members as etcd has them.
 *   join    registers a node's key (its data directory's, made when missing) ahead of its
 *           first start, after checking the chain key file is the cluster's.
 *   remove  takes a member out, by its node id or key: a removal signed by the chain key,
 *           written to the log and to cairn/removed/ in one transaction (exactly once).
 *           Every member refuses that key's envelopes after it; the member itself stops
 *           acknowledging, and does not start again.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Etcd3 } from 'etcd3';
import { openEnv } from '../store/db.js';
import type { Signer } from '../crypto/secp256k1.js';
import { nodeLedgerParts } from '../ledger/compose.js';
import { encodeRemoval } from '../cluster/envelope.js';
import {
  CHAIN_KEY,
  LIVE,
  LOG,
  NODES,
  REMOVED,
  etcdClient,
  etcdReason,
  memberRecord,
  parseEndpoints,
  readChain,
  wasRemoved,
  type ChainRecord,
  type EtcdSettings,
  type MemberRecord,
} from '../cluster/etcd.js';
import { defaultNodeId } from '../node-api/status.js';
import {
  checkWritable,
  CliError,
  InputError,
  isMain,
  jsonRequested,
  keyFileOrNew,
  Output,
  parseOrUsage,
  readInput,
  readKeyFile,
  runCommand,
  timeoutOption,
  UsageError,
  type Args,
} from './args.js';

export const USAGE = `usage: cairn cluster <init|status|join|remove> --etcd URL[,URL…] [options]
Prepares and shows a cluster: nodes that share one chain, ordered by etcd (docs/cluster.md).
  init   --chain-key FILE [--verify trust|all]
                                make the chain key (when FILE does not exist) and the chain in etcd;
                                --verify all: every member re-verifies every batch (default trust)
  status                        the chain and its members
  join   --chain-key FILE --data-dir DIR [--node-id ID]
                                register the node of DIR (its key is made when missing)
  remove --chain-key FILE (--node-id ID | --key PUBLIC_KEY)
                                take a member out: its later envelopes are refused, it
                                stops acknowledging and does not start again
  --etcd URL[,URL…]             etcd client URLs (default CAIRN_CLUSTER_ETCD)
  --cluster-etcd-ca/-cert/-key  PEM files of etcd's TLS with client certificates
  --timeout SECONDS             how long the command may wait for etcd (default 30)
  --json                        JSON output; --quiet: nothing but the result
Then start each member with CAIRN_CLUSTER_ETCD=URL[,URL…] CAIRN_CHAIN_KEY=FILE (flags --cluster-etcd, --chain-key).
exit status: 0 done, 1 refused or etcd unreachable, 2 usage or input error (a missing or unreadable key or PEM file)
`;

const VALUED = ['etcd', 'verify', 'chain-key', 'data-dir', 'node-id', 'key', 'cluster-etcd-ca', 'cluster-etcd-cert', 'cluster-etcd-key', 'timeout'];
const SUBCOMMANDS = ['init', 'status', 'join', 'remove'];

/** Block 0 of a chain signed by `chainKey`, made as a member makes it, in a throw-away directory. */
export async function genesisBlockId(chainKey: Signer): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-genesis-'));
  const db = openEnv(dir);
  try {
    const parts = nodeLedgerParts(
      db,
      chainKey,
      { dataDir: dir, nodeKeyFile: '', maxBatchesPerBlock: 0, minBlockIntervalMs: 0, queueMultiplier: 1, queueInitialAverage: 1 },
      null,
    );
    parts.writer.loadState();
    return (await parts.genesis()).blockId;
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function settings(args: Args): EtcdSettings {
  const v = args.options.get('etcd') ?? process.env.CAIRN_CLUSTER_ETCD;
  if (!v) throw new UsageError('--etcd URL[,URL…] is required');
  let endpoints: string[];
  try {
    endpoints = parseEndpoints(v);
  } catch (err) {
    throw new UsageError(`${args.options.has('etcd') ? '--etcd' : 'CAIRN_CLUSTER_ETCD'}: ${(err as Error).message}`);
  }
  // As a member reads them: the flag, else CAIRN_CLUSTER_ETCD_CA/_CERT/_KEY.
  const pem = (k: string): string | undefined => {
    const env = `CAIRN_${k.toUpperCase().replace(/-/g, '_')}`;
    const p = args.options.get(k) ?? (process.env[env] || undefined);
    if (p === undefined) return undefined;
    // Read here, before etcd is asked: a missing file is an input error naming its flag.
    readInput(p, args.options.has(k) ? `--${k}` : env);
    return resolve(p);
  };
  const tls = { ca: pem('cluster-etcd-ca'), cert: pem('cluster-etcd-cert'), key: pem('cluster-etcd-key') };
  const given = Object.values(tls).filter((v) => v !== undefined).length;
  if (given !== 0 && given !== 3) throw new UsageError("etcd's TLS needs all of --cluster-etcd-ca, --cluster-etcd-cert and --cluster-etcd-key");
  return { endpoints, ...tls };
}

function chainKeyFile(args: Args): string {
  const f = args.options.get('chain-key') ?? process.env.CAIRN_CHAIN_KEY;
  if (!f) throw new UsageError('--chain-key FILE is required');
  return resolve(f);
}

/**
 * Runs `f` with an etcd client, within the command's deadline; an etcd failure becomes an
 * error that names the endpoints, what is wrong, and the flag that points the tool elsewhere.
 */
async function withClient<T>(s: EtcdSettings, timeoutMs: number, f: (c: Etcd3) => Promise<T>): Promise<T> {
  const client = etcdClient(s);
  const where = s.endpoints.join(',');
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new CliError(
            `etcd at ${where} did not answer within ${timeoutMs / 1000} s (--timeout SECONDS waits longer): is it running, with a quorum?`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([f(client), deadline]);
  } catch (err) {
    if (err instanceof UsageError || err instanceof CliError) throw err;
    throw new CliError(`etcd at ${where}: ${etcdReason(err)} (--etcd URL[,URL…] or CAIRN_CLUSTER_ETCD points this tool at etcd)`);
  } finally {
    clearTimeout(timer);
    client.close();
  }
}

async function init(args: Args, out: Output, timeoutMs: number): Promise<number> {
  const s = settings(args);
  const file = chainKeyFile(args);
  const verify = args.options.get('verify') ?? 'trust';
  if (verify !== 'trust' && verify !== 'all') throw new UsageError(`--verify takes trust or all, got "${verify}"`);
  // An existing key must be one; a new one must be writable: both known before etcd is asked.
  const have = existsSync(file) ? readKeyFile(file, '--chain-key') : undefined;
  if (!have) checkWritable(file, '--chain-key');
  return withClient(s, timeoutMs, async (client) => {
    const existing = await readChain(client);
    const compare = (chain: ChainRecord): number => {
      if (!have)
        throw new CliError(
          `the cluster already has a chain (key ${chain.chainKey.slice(0, 16)}…); ${file} does not exist: copy the chain key from where it was made`,
        );
      if (have.publicKey !== chain.chainKey)
        throw new CliError(
          `the cluster's chain is signed by another key (${chain.chainKey.slice(0, 16)}…, ${file} holds ${have.publicKey.slice(0, 16)}…): refusing`,
        );
      out.result(
        { ...chain, new: false },
        `the cluster already has this chain (key ${chain.chainKey.slice(0, 16)}…, genesis ${chain.genesis.slice(0, 16)}…): nothing to do`,
      );
      return 0;
    };
    if (existing) return compare(existing);
    const key = keyFileOrNew(file, '--chain-key');
    const record: ChainRecord = { chainKey: key.publicKey, genesis: await genesisBlockId(key), created: new Date().toISOString(), verify };
    // Exactly once: only if no chain record was ever created.
    const res = await client
      .if(CHAIN_KEY, 'Create', '==', 0)
      .then(client.put(CHAIN_KEY).value(JSON.stringify(record)))
      .commit();
    if (!res.succeeded) {
      const now = await readChain(client);
      if (now) return compare(now);
    }
    out.result(
      { ...record, new: true },
      `chain created: key ${record.chainKey} (in ${file}), genesis ${record.genesis}, signatures checked by ${verify === 'all' ? 'every member' : 'the ingesting member'}`,
    );
    return 0;
  });
}

async function status(args: Args, out: Output, timeoutMs: number): Promise<number> {
  const s = settings(args);
  return withClient(s, timeoutMs, async (client) => {
    const chain = await readChain(client);
    if (!chain) throw new CliError('the cluster has no chain yet (cairn cluster init)');
    const [nodes, live, removed] = await Promise.all([
      client.getAll().prefix(NODES).strings(),
      client.getAll().prefix(LIVE).strings(),
      client.getAll().prefix(REMOVED).keys(),
    ]);
    const gone = new Set(removed.map((k) => k.slice(REMOVED.length)));
    // A value that is no registration (garbage another writer left) is not a member.
    const members = Object.entries(nodes).flatMap(([k, v]) => {
      const key = k.slice(NODES.length);
      const r = memberRecord(v);
      if (!r) return [];
      const l = live[`${LIVE}${key}`];
      const lr = l ? memberRecord(l) : null;
      return {
        node_id: r.nodeId,
        public_key: key,
        ledger_url: lr?.ledgerUrl ?? r.ledgerUrl,
        live: lr !== null,
        removed: gone.has(key),
        applied: lr?.applied ?? null,
        height: lr?.height ?? null,
      };
    });
    const state = (m: { live: boolean; removed: boolean }): string => (m.removed ? 'out ' : m.live ? 'up  ' : 'down');
    const lines = [
      `chain key ${chain.chainKey}, genesis ${chain.genesis}, verify ${chain.verify ?? 'trust'}`,
      ...members.map((m) => `${state(m)} ${m.node_id} ${m.ledger_url || '-'} height ${m.height ?? '-'} log ${m.applied ?? '-'}`),
    ];
    out.result({ chain, members }, lines.join('\n'));
    return 0;
  });
}

async function joinNode(args: Args, out: Output, timeoutMs: number): Promise<number> {
  const s = settings(args);
  const file = chainKeyFile(args);
  const dir = resolve(args.options.get('data-dir') ?? (process.env.CAIRN_DATA_DIR || './data'));
  if (!existsSync(file)) throw new InputError(`--chain-key: ${file} does not exist: copy the chain key from where it was made`);
  const chainKey = readKeyFile(file, '--chain-key');
  return withClient(s, timeoutMs, async (client) => {
    const chain = await readChain(client);
    if (!chain) throw new CliError('the cluster has no chain yet (cairn cluster init)');
    if (chainKey.publicKey !== chain.chainKey) throw new CliError(`${file} is not this cluster's chain key`);
    const node = keyFileOrNew(join(dir, 'keys', 'validator.priv'), '--data-dir');
    if (await wasRemoved(client, chain.chainKey, node.publicKey))
      throw new CliError(
        `the node of ${dir} (${node.publicKey.slice(0, 16)}…) was removed from this cluster: a new data directory (a new key) joins instead`,
      );
    const key = `${NODES}${node.publicKey}`;
    // The id the node will give itself when started without one (src/node-api/status.ts).
    const nodeId = args.options.get('node-id') ?? (process.env.CAIRN_NODE_ID || defaultNodeId(node.publicKey));
    const rec: MemberRecord = { nodeId, publicKey: node.publicKey, ledgerUrl: '' };
    await client
      .if(key, 'Create', '==', 0)
      .then(client.put(key).value(JSON.stringify(rec)))
      .commit();
    out.result(
      { node_id: nodeId, public_key: node.publicKey, data_dir: dir },
      `registered ${nodeId} (${node.publicKey.slice(0, 16)}…); start it with CAIRN_DATA_DIR=${dir} CAIRN_NODE_ID=${nodeId} CAIRN_CLUSTER_ETCD=${s.endpoints.join(',')} CAIRN_CHAIN_KEY=${file}`,
    );
    return 0;
  });
}

async function removeNode(args: Args, out: Output, timeoutMs: number): Promise<number> {
  const s = settings(args);
  const file = chainKeyFile(args);
  const id = args.options.get('node-id');
  const pub = args.options.get('key');
  if ((id === undefined) === (pub === undefined)) throw new UsageError('remove takes --node-id ID or --key PUBLIC_KEY (one of them)');
  if (!existsSync(file)) throw new InputError(`--chain-key: ${file} does not exist: a removal is signed with the chain key`);
  const chainKey = readKeyFile(file, '--chain-key');
  return withClient(s, timeoutMs, async (client) => {
    const chain = await readChain(client);
    if (!chain) throw new CliError('the cluster has no chain yet (cairn cluster init)');
    if (chainKey.publicKey !== chain.chainKey) throw new CliError(`${file} is not this cluster's chain key: refusing`);
    const nodes = await client.getAll().prefix(NODES).strings();
    const found = Object.entries(nodes)
      .flatMap(([k, v]) => {
        const rec = memberRecord(v);
        return rec ? [{ key: k.slice(NODES.length), rec }] : [];
      })
      .filter((m) => (pub !== undefined ? m.key === pub : m.rec.nodeId === id));
    const m = found[0];
    if (m === undefined) throw new CliError(`no member ${id ?? pub} is registered in this cluster`);
    if (found.length > 1) throw new CliError(`${found.length} members are registered as ${id}: name the one to remove by --key`);
    const record = `${REMOVED}${m.key}`;
    const value = encodeRemoval(chainKey, m.key);
    // Exactly once; the log entry and the record at one revision, the log entry first.
    const res = await client
      .if(record, 'Create', '==', 0)
      .then(client.put(`${LOG}${chain.chainKey}/remove-${m.key}`).value(value), client.put(record).value(value))
      .commit();
    const revision = res.succeeded ? Number(res.header.revision) : Number((await client.get(record).exec()).kvs[0]?.create_revision ?? 0);
    out.result(
      { node_id: m.rec.nodeId, public_key: m.key, revision, new: res.succeeded },
      res.succeeded
        ? `removed ${m.rec.nodeId} (${m.key.slice(0, 16)}…) at log revision ${revision}: every member refuses its envelopes after it`
        : `${m.rec.nodeId} (${m.key.slice(0, 16)}…) was removed already, at log revision ${revision}: nothing to do`,
    );
    return 0;
  });
}

export async function run(argv: string[]): Promise<number> {
  const args = parseOrUsage(argv, VALUED);
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [sub, ...extra] = args.positional;
  if (sub === undefined) throw new UsageError('missing subcommand: init, status, join or remove');
  if (!SUBCOMMANDS.includes(sub)) throw new UsageError(`unknown subcommand ${sub} (init, status, join or remove)`);
  if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
  const out = new Output(args);
  const timeoutMs = timeoutOption(args);
  if (sub === 'init') return init(args, out, timeoutMs);
  if (sub === 'status') return status(args, out, timeoutMs);
  if (sub === 'join') return joinNode(args, out, timeoutMs);
  return removeNode(args, out, timeoutMs);
}

if (isMain(import.meta.url)) void runCommand('cairn cluster', USAGE, () => run(process.argv.slice(2)), jsonRequested(process.argv));
