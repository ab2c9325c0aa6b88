/**
 * Node identity (id and display name: configured, or made once from the node key and kept
 * in `node.meta`) and `GET /status`. One id everywhere: the start log, `/status`, a cluster
 * member's registration and the cluster view (src/node.ts hands the same id to the member).
 */
import type { RootDatabase } from 'lmdb';
import type { Config } from '../config.js';
import { openStore } from '../store/checksum.js';
import { nodeDbName } from '../store/names.js';
import { json, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import type { Stores } from './stores.js';

export interface NodeIdentity {
  nodeId: string;
  displayName: string;
}

/**
 * The id of a node started without `--node-id` and with none stored: from its node key
 * (validator.priv), so that `cairn cluster join`, which registers a node before its first
 * start, names it as the node will name itself.
 */
export function defaultNodeId(publicKey: string): string {
  return `cairn-${publicKey.slice(2, 10)}`;
}

/** The node's id as resolveNodeIdentity will make it, read without writing (for a cluster member's registration at start). */
export function nodeIdOf(config: Config, db: RootDatabase, publicKey: string): string {
  return config.nodeId ?? openStore<string, string>(db, nodeDbName('meta')).get('node_id') ?? defaultNodeId(publicKey);
}

/** Reads or creates the stored identity; configured values win (and are kept). */
export async function resolveNodeIdentity(config: Config, stores: Stores, publicKey: string): Promise<NodeIdentity> {
  return stores.root.transaction(() => {
    const nodeId = config.nodeId ?? stores.meta.get('node_id') ?? defaultNodeId(publicKey);
    const displayName = config.displayName ?? (config.nodeId === undefined ? stores.meta.get('display_name') : undefined) ?? `Node: ${nodeId}`;
    if (stores.meta.get('node_id') !== nodeId) void stores.meta.put('node_id', nodeId);
    if (stores.meta.get('display_name') !== displayName) void stores.meta.put('display_name', displayName);
    return { nodeId, displayName };
  });
}

/** The circuit peer network's endpoints, filled in once it listens. */
export interface NetworkEndpoints {
  network: string[];
  advertised: string[];
}

export function registerStatusRoute(r: Router, config: Config, version: string, identity: Promise<NodeIdentity>, endpoints: NetworkEndpoints): void {
  r.add({
    method: 'get',
    path: '/status',
    permission: 'status.read',
    reply: nodeReplies.status,
    handler: async ({ req }) => {
      const id = await identity;
      const { host, port } = config.nodeBind;
      const wildcard = host === '0.0.0.0' || host === '::';
      const service = port !== 0 && !wildcard ? `http://${host.includes(':') ? `[${host}]` : host}:${port}` : `http://${req.headers.host ?? host}`;
      return json({
        version,
        node_id: id.nodeId,
        display_name: id.displayName,
        service_endpoint: service,
        network_endpoints: endpoints.network,
        advertised_endpoints: endpoints.advertised,
      });
    },
  });
}
