/**
 * Versions and revisions of a purchase order:
 * `/purchase_order/{uid}/version` (list, create), `.../version/{version_id}` (fetch,
 * answered as `{data: [version], paging}` as the spec says; update with `{data:
 * [versions]}` or one version object), `.../revision` (list) and
 * `.../revision/{revision_number}` (one Revision; `latest` names the newest).
 */
import { gridKeys, gridPrefixes } from '../ledger/read-model/keys.js';
import type { PurchaseOrderRecord, VersionRecord } from '../ledger/read-model/records.js';
import type { Req } from '../http/server.js';
import type { DataBackend } from './backend.js';
import { listBody, pagingOf, parsePage } from './paging.js';
import { requirePo, versionCreate, versionUpdate } from './po-common.js';
import { revisionJson, versionJson } from './records.js';
import { ok, type DataRouter } from './router.js';
import { dataReplies } from './replies.js';
import { submitActions, writeQuery } from './submit.js';
import { at, bad, dataItems, isObj, objectBody, uniqueIn } from './validate.js';
import { show } from '../codec/show.js';
import { dataErrors } from './errors.js';

function requireVersion(be: DataBackend, po: PurchaseOrderRecord, vid: string): VersionRecord {
  const v = be.rm.get('poVersion', gridKeys.poVersion(po.uid, vid));
  if (v === undefined) throw dataErrors.poVersionNotFound({ uid: po.uid, version: vid });
  return v;
}

/** Update items: `{data: [versions]}`, or a single version object. */
function updateItems(req: Req): { items: unknown[]; path: (i: number) => string } {
  const body = objectBody(req);
  if ('data' in body) {
    for (const k of Object.keys(body)) if (k !== 'data') throw bad(`\`${k}\` is not a known field (the body is {"data": [versions]})`);
    if (!Array.isArray(body.data) || body.data.length === 0) throw bad('`data` must be a non-empty array of versions');
    return { items: body.data, path: (i) => `data[${i}]` };
  }
  return { items: [body], path: () => '' };
}

export function registerPoVersions(r: DataRouter): void {
  r.route({
    method: 'get',
    path: '/purchase_order/:uid/version',
    reply: dataReplies.versions,
    load: ({ be, params }) => requirePo(be, params.uid),
    query: parsePage,
    handler: ({ req, be, loaded: po, query: page }) => {
      const slice = be.rm.page('poVersion', gridPrefixes.versionsOf(po.uid), page.offset, page.limit);
      return ok(listBody(req, page, slice, (v) => versionJson(be, v)));
    },
  });

  r.route({
    method: 'post',
    path: '/purchase_order/:uid/version',
    reply: dataReplies.submitted,
    body: dataItems,
    query: writeQuery,
    handler: ({ be, params, body: items, query }) => {
      const po = requirePo(be, params.uid);
      const signer = be.signers.pick(query.signer);
      const seen = new Set<string>();
      const planned = items.map((item, i) => {
        const path = `data[${i}]`;
        const v = versionCreate(be, item, po.uid, path);
        const vid = v.version_id as string;
        uniqueIn(seen, vid, `${path}.version_id`);
        if (po.versions.some((x) => x.version_id === vid))
          throw bad(`\`${path}.version_id\`: version ${vid} already exists in purchase order ${po.uid}`);
        return { action: { ...v, action: 'create_version' }, path };
      });
      return submitActions(be, signer, planned, query.wait);
    },
  });

  r.route({
    method: 'get',
    path: '/purchase_order/:uid/version/:version_id',
    reply: dataReplies.versions,
    load: ({ be, params }) => requireVersion(be, requirePo(be, params.uid), params.version_id),
    query: parsePage,
    handler: ({ req, be, loaded: v, query: page }) => {
      return ok({ data: page.offset === 0 ? [versionJson(be, v)] : [], paging: pagingOf(req, page, 1) });
    },
  });

  r.route({
    method: 'put',
    path: '/purchase_order/:uid/version/:version_id',
    reply: dataReplies.submitted,
    body: updateItems,
    query: writeQuery,
    handler: ({ be, params, body: { items, path }, query }) => {
      const po = requirePo(be, params.uid);
      const vid = params.version_id;
      requireVersion(be, po, vid);
      const signer = be.signers.pick(query.signer);
      const planned = items.map((item, i) => {
        const p = path(i);
        if (!isObj(item)) throw bad(`\`${p || 'body'}\` must be a version object`);
        if (item.version_id !== undefined && item.version_id !== vid)
          throw bad(`\`${at(p, 'version_id')}\` (${show(item.version_id)}) does not match the path (${vid})`);
        return { action: { ...versionUpdate(be, po, { ...item, version_id: vid }, p, 'current'), action: 'update_version' }, path: p };
      });
      return submitActions(be, signer, planned, query.wait);
    },
  });

  r.route({
    method: 'get',
    path: '/purchase_order/:uid/version/:version_id/revision',
    reply: dataReplies.revisions,
    load: ({ be, params }) => {
      const po = requirePo(be, params.uid);
      requireVersion(be, po, params.version_id);
      return po;
    },
    query: parsePage,
    handler: ({ req, be, params, loaded: po, query: page }) => {
      const slice = be.rm.page('poRevision', gridPrefixes.revisionsOf(po.uid, params.version_id), page.offset, page.limit);
      return ok(listBody(req, page, slice, (rev) => revisionJson(be, rev)));
    },
  });

  r.route({
    method: 'get',
    path: '/purchase_order/:uid/version/:version_id/revision/:revision_number',
    reply: dataReplies.revision,
    handler: ({ be, params }) => {
      const po = requirePo(be, params.uid);
      const v = requireVersion(be, po, params.version_id);
      const raw = params.revision_number;
      if (raw !== 'latest' && !/^\d{1,9}$/.test(raw))
        throw bad(`\`revision_number\` must be a positive integer or \`latest\`, got "${raw.slice(0, 40)}"`);
      const n = raw === 'latest' ? Math.max(0, ...v.revisions) : Number(raw);
      const rev = be.rm.get('poRevision', gridKeys.poRevision(po.uid, v.version_id, n));
      if (rev === undefined) throw dataErrors.poRevisionNotFound({ uid: po.uid, version: v.version_id, revision: raw });
      return ok(revisionJson(be, rev));
    },
  });
}
