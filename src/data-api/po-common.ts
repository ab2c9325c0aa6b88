/**
 * Shared pieces of the purchase-order routes: lookups (by uid or by an alternate id
 * `<id_type>:<id>`), and the version / revision parts of request bodies.
 *
 * A version carries its new order document in `revision` ({order_xml_v3_4, submitter,
 * created_at}; the contract numbers revisions itself). A version update without
 * `revision` re-sends a revision the version already has, so only its state changes:
 * the one named by `current_revision_number`, else the current one (PUT on a version) or
 * the latest one (`version_updates` of a purchase-order update, which the contract
 * compares with the latest).
 */
import { gridKeys, gridPrefixes } from '../ledger/read-model/keys.js';
import type { PurchaseOrderRecord, RevisionRecord } from '../ledger/read-model/records.js';
import { WORKFLOW_IDS } from '../families/grid/workflow.js';
import type { DataBackend } from './backend.js';
import { sameService } from './records.js';
import { at, bad, checkId, checkShape, reqString, type Obj, type Shape } from './validate.js';
import { show } from '../codec/show.js';
import { dataErrors } from './errors.js';

const REVISION: Shape = {
  revision_number: 'integer',
  revision_id: 'integer',
  submitter: 'string',
  created_at: 'integer',
  order_xml_v3_4: reqString,
  service_id: 'string',
};

export const VERSION: Shape = {
  version_id: reqString,
  po_uid: 'string',
  workflow_state: 'string',
  is_draft: 'boolean',
  revision: 'object',
  current_revision_number: 'integer',
  /** Read-only (revision numbers); accepted so a fetched version can be sent back. */
  revisions: 'array',
  service_id: 'string',
};

export function findPo(be: DataBackend, uidOrAlt: string): PurchaseOrderRecord | undefined {
  const po = be.rm.get('purchaseOrder', gridKeys.purchaseOrder(uidOrAlt));
  if (po !== undefined || !uidOrAlt.includes(':')) return po;
  const alt = be.rm.all('poAlternateId', gridPrefixes.poByAlternateId(uidOrAlt))[0];
  return alt === undefined ? undefined : be.rm.get('purchaseOrder', gridKeys.purchaseOrder(alt.po_uid));
}

export function requirePo(be: DataBackend, uid: string): PurchaseOrderRecord {
  const po = findPo(be, uid);
  if (po === undefined) throw dataErrors.purchaseOrderNotFound({ uid });
  return po;
}

export function checkWorkflowId(v: unknown, path: string): void {
  if (v !== undefined && !(WORKFLOW_IDS as readonly unknown[]).includes(v)) {
    throw bad(`\`${path}\`: unknown workflow ${show(v)} (known: ${WORKFLOW_IDS.join(', ')})`);
  }
}

function checkRevision(be: DataBackend, v: unknown, path: string): Obj {
  const r = checkShape(v, REVISION, path);
  sameService(be, r.service_id, at(path, 'service_id'));
  return r;
}

/** The fields of a new version (inside a create, or posted to `.../version`). */
export function versionCreate(be: DataBackend, v: unknown, uid: string, path: string): Obj {
  const o = checkShape(v, VERSION, path);
  if (o.po_uid !== undefined && o.po_uid !== uid)
    throw bad(`\`${at(path, 'po_uid')}\` (${show(o.po_uid)}) does not match the purchase order (${uid})`);
  sameService(be, o.service_id, at(path, 'service_id'));
  if (o.revision === undefined) throw bad(`\`${at(path, 'revision')}\` is required: the version's first order document`);
  checkId(o.version_id as string, at(path, 'version_id'));
  return {
    version_id: o.version_id,
    po_uid: uid,
    workflow_state: o.workflow_state,
    is_draft: o.is_draft,
    revision: checkRevision(be, o.revision, at(path, 'revision')),
  };
}

function fromStored(r: RevisionRecord): Obj {
  return { revision_number: r.revision_number, submitter: r.submitter, created_at: Number(r.created_at), order_xml_v3_4: r.order_xml_v3_4 };
}

/** The fields of an update of an existing version of `po`. */
export function versionUpdate(be: DataBackend, po: PurchaseOrderRecord, v: unknown, path: string, fallback: 'current' | 'latest'): Obj {
  const o = checkShape(v, { ...VERSION, workflow_state: reqString }, path);
  if (o.po_uid !== undefined && o.po_uid !== po.uid)
    throw bad(`\`${at(path, 'po_uid')}\` (${show(o.po_uid)}) does not match the purchase order (${po.uid})`);
  sameService(be, o.service_id, at(path, 'service_id'));
  const vid = o.version_id as string;
  const stored = po.versions.find((x) => x.version_id === vid);
  if (stored === undefined) throw bad(`\`${at(path, 'version_id')}\`: purchase order ${po.uid} has no version ${vid}`);
  let revision: Obj;
  if (o.revision !== undefined) revision = checkRevision(be, o.revision, at(path, 'revision'));
  else {
    const n =
      (o.current_revision_number as number | undefined) ??
      (fallback === 'current' ? stored.current_revision_number : Math.max(0, ...stored.revisions));
    const r = be.rm.get('poRevision', gridKeys.poRevision(po.uid, vid, n));
    if (r === undefined) throw bad(`\`${at(path, 'current_revision_number')}\`: version ${vid} has no revision ${n}`);
    revision = fromStored(r);
  }
  return { version_id: vid, po_uid: po.uid, workflow_state: o.workflow_state, is_draft: o.is_draft ?? stored.is_draft, revision };
}
