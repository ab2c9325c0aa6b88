/**
 * Purchase-order payloads: their decoded shapes and the field checks upstream runs before
 * looking at state (required fields, revision numbering from 1, known workflow ids).
 */
import { checkId, invalid, toNum, type Int64, type PurchaseOrderAlternateIdMsg } from './common.js';
import { WORKFLOW_IDS } from './workflow.js';

export interface RevisionPayload {
  revisionId: Int64;
  submitter: string;
  createdAt: Int64;
  orderXmlV3_4: string;
}
export interface CreateVersion {
  versionId: string;
  poUid: string;
  isDraft: boolean;
  workflowState: string;
  revision?: RevisionPayload | null;
}
export interface UpdateVersion {
  versionId: string;
  poUid: string;
  workflowState: string;
  isDraft: boolean;
  revision?: RevisionPayload | null;
}
export interface CreatePo {
  uid: string;
  createdAt: Int64;
  buyerOrgId: string;
  sellerOrgId: string;
  workflowState: string;
  alternateIds: PurchaseOrderAlternateIdMsg[];
  createVersionPayload?: CreateVersion | null;
  workflowId: string;
}
export interface UpdatePo {
  poUid: string;
  workflowState: string;
  isClosed: boolean;
  acceptedVersionNumber: string;
  alternateIds: PurchaseOrderAlternateIdMsg[];
  versionUpdates: UpdateVersion[];
}
export interface PoPayloadMsg {
  action: number;
  timestamp: Int64;
  createPoPayload?: CreatePo | null;
  updatePoPayload?: UpdatePo | null;
  createVersionPayload?: CreateVersion | null;
  updateVersionPayload?: UpdateVersion | null;
}

export const EMPTY_REVISION: RevisionPayload = { revisionId: 0, submitter: '', createdAt: 0, orderXmlV3_4: '' };
export const EMPTY_CREATE_VERSION: CreateVersion = { versionId: '', poUid: '', isDraft: false, workflowState: '' };
export const EMPTY_UPDATE_VERSION: UpdateVersion = { versionId: '', poUid: '', isDraft: false, workflowState: '' };
export const EMPTY_CREATE_PO: CreatePo = {
  uid: '',
  createdAt: 0,
  buyerOrgId: '',
  sellerOrgId: '',
  workflowState: '',
  alternateIds: [],
  workflowId: '',
};
export const EMPTY_UPDATE_PO: UpdatePo = {
  poUid: '',
  workflowState: '',
  isClosed: false,
  acceptedVersionNumber: '',
  alternateIds: [],
  versionUpdates: [],
};

export function validateRevision(r: RevisionPayload): void {
  if (r.submitter === '') invalid('`submitter` is required for a po revision');
  if (r.orderXmlV3_4 === '') invalid('`order_xml_v3_4` is required for a po revision');
  if (toNum(r.revisionId) === 0) invalid('`revision_id` must be greater than 0');
  if (toNum(r.createdAt) === 0) invalid('Invalid `created_at` value, must not be 0');
}

export function validateCreateVersion(p: CreateVersion): void {
  if (p.versionId === '') invalid('`version_id` is required to create a purchase order version');
  if (p.poUid === '') invalid('`po_uid` is required to create a purchase order version');
  if (p.workflowState === '') invalid('`workflow_state` is required to create a purchase order version');
  checkId(p.versionId, 'Version ID');
  const revision = p.revision ?? EMPTY_REVISION;
  if (toNum(revision.revisionId) !== 1) {
    invalid(`Revision IDs begin incrementing at \`1\`, attempting to create a new version with revision ID \`${toNum(revision.revisionId)}\``);
  }
  validateRevision(revision);
}

export function validateUpdateVersion(p: UpdateVersion): void {
  if (p.versionId === '') invalid('`version_id` is required to update a purchase order version');
  if (p.poUid === '') invalid('`po_uid` is required to update a purchase order version');
  if (p.workflowState === '') invalid('`workflow_state` is required to update a purchase order version');
  validateRevision(p.revision ?? EMPTY_REVISION);
}

function checkAlternateIds(ids: PurchaseOrderAlternateIdMsg[]): void {
  for (const a of ids) {
    checkId(a.idType, 'Alternate ID type');
    checkId(a.id, 'Alternate ID');
  }
}

export function validateCreatePo(p: CreatePo): void {
  if (p.uid === '') invalid('`uid` is required to create a purchase order');
  if (p.buyerOrgId === '') invalid('`buyer_org_id` is required to create a purchase order');
  if (p.sellerOrgId === '') invalid('`seller_org_id` is required to create a purchase order');
  if (toNum(p.createdAt) === 0) invalid('`created_at` is required to create a purchase order');
  if (p.workflowState === '') invalid('`workflow_state` is required to create a purchase order');
  if (p.workflowId === '') invalid('`workflow_id` is required to create a purchase order');
  checkId(p.uid, 'Purchase order UID');
  checkAlternateIds(p.alternateIds);
  if (!(WORKFLOW_IDS as readonly string[]).includes(p.workflowId)) {
    invalid(`No workflow exists with id ${p.workflowId}`);
  }
  const v = p.createVersionPayload;
  if (v) {
    if (v.poUid !== p.uid) {
      invalid(`Version ${v.versionId} must refer to purchase order ${p.uid} within the payload, ` + `refers to purchase order ${v.poUid}`);
    }
    validateCreateVersion(v);
  }
}

export function validateUpdatePo(p: UpdatePo): void {
  if (p.poUid === '') invalid('`uid` is required to update a purchase order');
  if (p.workflowState === '') invalid('`workflow_state` is required to update a purchase order');
  checkAlternateIds(p.alternateIds);
  const seen = new Set<string>();
  for (const v of p.versionUpdates) {
    if (seen.has(v.versionId)) invalid(`Multiple update payloads detected for version ${v.versionId}`);
    seen.add(v.versionId);
    if (v.poUid !== p.poUid) {
      invalid(`Version ${v.versionId} must refer to purchase order ${p.poUid} within the payload, ` + `refers to purchase order ${v.poUid}`);
    }
    validateUpdateVersion(v);
  }
}
