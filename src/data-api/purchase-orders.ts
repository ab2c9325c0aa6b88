/**
 * Purchase orders: list (filters `buyer_org_id`, `seller_org_id`, `is_open`,
 * `has_accepted_version`), create (`{data: [create items]}`, each optionally with its
 * first version in `create_version_payload`), fetch (by uid or alternate id) and update.
 * In an update, `is_closed`, `accepted_version_number` and `alternate_ids` keep their
 * current values when left out (`""` clears the accepted version); `workflow_state` is
 * required.
 */
import { createRoute } from './record-routes.js';
import { gridKeys } from '../ledger/read-model/keys.js';
import type { PurchaseOrderRecord } from '../ledger/read-model/records.js';
import { COLLABORATIVE } from '../families/grid/workflow.js';
import type { Req } from '../http/server.js';
import { listBody, parsePage, type PageQuery } from './paging.js';
import { checkWorkflowId, requirePo, versionCreate, versionUpdate } from './po-common.js';
import { knownOrg, purchaseOrderJson, sameService } from './records.js';
import type { Slice } from '../ledger/read-model/reader.js';
import type { DataBackend } from './backend.js';
import { ok, type DataRouter } from './router.js';
import { dataReplies } from './replies.js';
import { submitActions, writeQuery } from './submit.js';
import { bad, checkShape, isObj, objectBody, reqString, samePath, uniqueIn, type Shape } from './validate.js';

const CREATE: Shape = {
  uid: reqString,
  workflow_state: 'string',
  buyer_org_id: reqString,
  seller_org_id: reqString,
  create_version_payload: 'object',
  alternate_ids: 'array',
  created_at: 'integer',
  workflow_id: 'string',
  service_id: 'string',
};

const UPDATE: Shape = {
  po_uid: 'string',
  uid: 'string',
  workflow_state: reqString,
  is_closed: 'boolean',
  accepted_version_number: 'string',
  version_updates: 'array',
  alternate_ids: 'array',
  service_id: 'string',
};

function boolFilter(req: Req, name: string): boolean | undefined {
  const v = req.query.get(name);
  if (v === null) return undefined;
  if (v !== 'true' && v !== 'false') throw bad(`\`${name}\` must be true or false`);
  return v === 'true';
}

/** The query of the purchase order list: paging, then the filters. */
interface OrderQuery {
  page: PageQuery;
  buyer: string | null;
  seller: string | null;
  open: boolean | undefined;
  accepted: boolean | undefined;
}

function orderQuery(req: Req): OrderQuery {
  const page = parsePage(req);
  const buyer = req.query.get('buyer_org_id');
  const seller = req.query.get('seller_org_id');
  const open = boolFilter(req, 'is_open');
  return { page, buyer, seller, open, accepted: boolFilter(req, 'has_accepted_version') };
}

function listOrders(be: DataBackend, { page, buyer, seller, open, accepted }: OrderQuery): Slice<PurchaseOrderRecord> {
  const { offset, limit } = page;
  if (buyer === null && seller === null && open === undefined && accepted === undefined) {
    return be.rm.page('purchaseOrder', '', offset, limit);
  }
  const all = be.rm
    .all('purchaseOrder')
    .filter(
      (po) =>
        (buyer === null || po.buyer_org_id === buyer) &&
        (seller === null || po.seller_org_id === seller) &&
        (open === undefined || po.is_closed !== open) &&
        (accepted === undefined || (po.accepted_version_number !== undefined) === accepted),
    );
  return { items: all.slice(offset, offset + limit), total: all.length };
}

export function registerPurchaseOrders(r: DataRouter): void {
  r.route({
    method: 'get',
    path: '/purchase_order',
    reply: dataReplies.purchaseOrders,
    query: orderQuery,
    handler: ({ req, be, query }) => ok(listBody(req, query.page, listOrders(be, query), (po) => purchaseOrderJson(be, po))),
  });

  r.route({
    method: 'get',
    path: '/purchase_order/:uid',
    reply: dataReplies.purchaseOrder,
    handler: ({ be, params }) => ok(purchaseOrderJson(be, requirePo(be, params.uid))),
  });

  createRoute(r, '/purchase_order', (be) => ({
    shape: CREATE,
    idField: 'uid',
    taken: (uid) => (be.rm.has('purchaseOrder', gridKeys.purchaseOrder(uid)) ? `purchase order ${uid} already exists` : undefined),
    action: (o, uid, path) => {
      knownOrg(be, o.buyer_org_id, `${path}.buyer_org_id`);
      knownOrg(be, o.seller_org_id, `${path}.seller_org_id`);
      checkWorkflowId(o.workflow_id, `${path}.workflow_id`);
      const version = isObj(o.create_version_payload)
        ? versionCreate(be, o.create_version_payload, uid, `${path}.create_version_payload`)
        : undefined;
      return {
        action: 'create_po',
        uid,
        workflow_state: o.workflow_state,
        buyer_org_id: o.buyer_org_id,
        seller_org_id: o.seller_org_id,
        alternate_ids: o.alternate_ids,
        created_at: o.created_at,
        workflow_id: o.workflow_id ?? COLLABORATIVE,
        create_version_payload: version,
      };
    },
  }));

  r.route({
    method: 'put',
    path: '/purchase_order/:uid',
    reply: dataReplies.submitted,
    body: (req) => checkShape(objectBody(req), UPDATE, ''),
    query: writeQuery,
    handler: ({ be, params, body: o, query }) => {
      const po = requirePo(be, params.uid);
      samePath(o, 'po_uid', po.uid, '');
      samePath(o, 'uid', po.uid, '');
      sameService(be, o.service_id, 'service_id');
      const seen = new Set<string>();
      const versionUpdates = ((o.version_updates as unknown[] | undefined) ?? []).map((v, i) => {
        const path = `version_updates[${i}]`;
        const u = versionUpdate(be, po, v, path, 'latest');
        uniqueIn(seen, u.version_id as string, `${path}.version_id`);
        return u;
      });
      const signer = be.signers.pick(query.signer);
      const action = {
        action: 'update_po',
        po_uid: po.uid,
        workflow_state: o.workflow_state,
        is_closed: o.is_closed ?? po.is_closed,
        accepted_version_number: o.accepted_version_number ?? po.accepted_version_number ?? '',
        alternate_ids: o.alternate_ids ?? po.alternate_ids.map((a) => `${a.id_type}:${a.id}`),
        version_updates: versionUpdates,
      };
      return submitActions(be, signer, [{ action, path: '' }], query.wait);
    },
  });
}
