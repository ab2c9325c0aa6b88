/**
 * Node identity (id and display name: configured, or generated once and kept in
 * `node.meta`) and `GET /status`.
 */
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { json, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import type { Stores } from './stores.js';

export interface NodeIdentity {
  nodeId: string;
  displayName: string;
}

/** Reads or creates the stored identity; configured values win (and are kept). */
export async function resolveNodeIdentity(config: Config, stores: Stores): Promise<NodeIdentity> {
  return stores.root.transaction(() => {
    const nodeId = config.nodeId ?? stores.meta.get('node_id') ?? `cairn-${randomBytes(4).toString('hex')}`;
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
