/** The node registry (`/registry/nodes[/{identity}]`). */
import { objectBody } from './body.js';
import { pageOf, parsePageQuery } from './paging.js';
import { matches, parseFilter } from './registry-filter.js';
import { nodeFromBody, nodeJson, type Registry } from './registry-store.js';
import { json, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import { nodeErrors } from './errors.js';

export function registerRegistryRoutes(r: Router, registry: Registry): void {
  r.add({
    method: 'get',
    path: '/registry/nodes',
    permission: 'registry.read',
    reply: nodeReplies.registryNodes,
    query: (req) => {
      const page = parsePageQuery(req.query);
      const rawFilter = req.query.get('filter');
      return { page, rawFilter, preds: rawFilter === null ? [] : parseFilter(rawFilter) };
    },
    handler: ({ query: { page, rawFilter, preds } }) => {
      const nodes = registry
        .list()
        .filter((n) => matches(preds, n.metadata))
        .map(nodeJson);
      const base = rawFilter === null ? '/registry/nodes?' : `/registry/nodes?filter=${encodeURIComponent(rawFilter)}&`;
      return json(pageOf(nodes, base, page));
    },
  });

  r.add({
    method: 'post',
    path: '/registry/nodes',
    permission: 'registry.write',
    reply: nodeReplies.message,
    body: (req) => nodeFromBody(objectBody(req)),
    handler: async ({ body: n }) => {
      await registry.put(n, false);
      return json({ message: `Node ${n.identity} added to the registry` });
    },
  });

  r.add({
    method: 'get',
    path: '/registry/nodes/:identity',
    permission: 'registry.read',
    reply: nodeReplies.registryNode,
    handler: ({ params }) => {
      const n = registry.get(params.identity);
      if (!n) throw nodeErrors.nodeNotFound();
      return json({ data: nodeJson(n) });
    },
  });

  r.add({
    method: 'put',
    path: '/registry/nodes/:identity',
    permission: 'registry.write',
    reply: nodeReplies.message,
    body: (req) => nodeFromBody(objectBody(req)),
    handler: async ({ params, body: n }) => {
      const identity = params.identity;
      if (n.identity !== identity) throw nodeErrors.nodeIdentityChanged({ identity: n.identity });
      const created = await registry.put(n, true);
      return json({ message: `Node ${identity} ${created ? 'added to' : 'replaced in'} the registry` });
    },
  });

  r.add({
    method: 'del',
    path: '/registry/nodes/:identity',
    permission: 'registry.write',
    reply: nodeReplies.message,
    handler: async ({ params }) => {
      if (!(await registry.remove(params.identity))) throw nodeErrors.nodeNotFound();
      return json({ message: `Node ${params.identity} removed from the registry` });
    },
  });
}
