/**
 * Purchase orders: an order between a buyer and a seller organization, moved through a
 * built-in workflow, with versions (each moved through the version sub-workflow) and
 * numbered revisions of the GS1 order document. One state entry holds the whole order.
 */
import type { Family, TxnContext, TxnInfo } from '../types.js';
import { GRID_NAMESPACE, purchaseOrderAddress } from './addressing.js';
import {
  G,
  PurchaseOrderAction,
  decodeMsg,
  findIn,
  invalid,
  toNum,
  upsertIn,
  type ListSpec,
  type PurchaseOrderMsg,
  type PurchaseOrderRevisionMsg,
  type PurchaseOrderVersionMsg,
} from './common.js';
import { getAgent, getOrganization } from './pike-state.js';
import {
  EMPTY_CREATE_PO,
  EMPTY_CREATE_VERSION,
  EMPTY_REVISION,
  EMPTY_UPDATE_PO,
  EMPTY_UPDATE_VERSION,
  validateCreatePo,
  validateCreateVersion,
  validateUpdatePo,
  validateUpdateVersion,
  type CreatePo,
  type CreateVersion,
  type PoPayloadMsg,
  type RevisionPayload,
  type UpdatePo,
  type UpdateVersion,
} from './po-payload.js';
import {
  CONSTRAINT,
  PERM,
  checkWorkflowPermission,
  getWorkflow,
  hasConstraint,
  transitionPermission,
  workflowState,
  type SubWorkflow,
  type Workflow,
  type WorkflowState,
} from './workflow.js';

export const PURCHASE_ORDER_FAMILY = 'grid_purchase_order';

export const PURCHASE_ORDERS: ListSpec<PurchaseOrderMsg> = {
  type: G.PurchaseOrderList,
  field: 'purchaseOrders',
  key: (po) => po.uid,
};

// ------------------------------------------------------------------ helpers

function getPurchaseOrder(ctx: TxnContext, uid: string): PurchaseOrderMsg | undefined {
  return findIn(ctx, PURCHASE_ORDERS, purchaseOrderAddress(uid), uid);
}

function signerOrg(ctx: TxnContext, signer: string): string {
  const agent = getAgent(ctx, signer);
  if (agent === undefined) invalid(`The signer is not an Agent: ${signer}`);
  return agent.orgId;
}

/**
 * The signer acts for its own organization, which must be the buyer or the seller.
 * Upstream checks workflow permissions in the signer's organization and nothing more,
 * so an agent of any organization could create or change the orders of others.
 */
function requireParty(org: string, buyerOrgId: string, sellerOrgId: string, uid: string): void {
  if (org !== buyerOrgId && org !== sellerOrgId) {
    invalid(`Organization ${org} of the signer is neither buyer nor seller of purchase order ${uid}`);
  }
}

function resolveWorkflow(id: string): Workflow {
  const wf = getWorkflow(id);
  if (wf === undefined) invalid(`No workflow exists with id ${id}`);
  return wf;
}

function requireState(sub: SubWorkflow, name: string): WorkflowState {
  const state = workflowState(sub, name);
  if (state === undefined) invalid(`Workflow state \`${name}\` does not exist in \`${sub.name}\` subworkflow`);
  return state;
}

function currentState(sub: SubWorkflow, name: string): WorkflowState {
  const state = workflowState(sub, name);
  if (state === undefined) invalid(`Stored workflow state \`${name}\` is unknown to the \`${sub.name}\` subworkflow`);
  return state;
}

/** Same state → the update permission; a move → `can-transition-<target>`. */
function moveOrUpdatePermission(from: string, to: string, updatePerm: string): string {
  return from === to ? updatePerm : transitionPermission(to);
}

function sameRevision(a: PurchaseOrderRevisionMsg, b: RevisionPayload): boolean {
  return (
    toNum(a.revisionId) === toNum(b.revisionId) &&
    a.submitter === b.submitter &&
    toNum(a.createdAt) === toNum(b.createdAt) &&
    a.orderXmlV3_4 === b.orderXmlV3_4
  );
}

function lastRevisionId(v: PurchaseOrderVersionMsg): number {
  return v.revisions.reduce((max, r) => Math.max(max, toNum(r.revisionId)), 0);
}

function appendRevision(v: PurchaseOrderVersionMsg, r: RevisionPayload): void {
  const id = lastRevisionId(v) + 1;
  v.revisions = [...v.revisions, { revisionId: id, submitter: r.submitter, createdAt: r.createdAt, orderXmlV3_4: r.orderXmlV3_4 }];
  v.currentRevisionId = id;
}

function checkVersionPermission(
  ctx: TxnContext,
  signer: string,
  org: string,
  wf: Workflow,
  uid: string,
  version: PurchaseOrderVersionMsg,
  desired: string,
): void {
  const from = currentState(wf.version, version.workflowState);
  const perm = moveOrUpdatePermission(version.workflowState, desired, PERM.updateVersion);
  if (!checkWorkflowPermission(ctx, signer, perm, from, desired)) {
    invalid(
      `Agent ${signer} does not have the correct permissions for organization ${org} to update ` +
        `purchase order version ${version.versionId} of ${uid} to a status of ${desired}`,
    );
  }
}

function acceptedVersions(wf: Workflow, po: PurchaseOrderMsg): PurchaseOrderVersionMsg[] {
  return po.versions.filter((v) => hasConstraint(wf.version.states.get(v.workflowState), CONSTRAINT.accepted));
}

// ------------------------------------------------------------------ actions

function newVersion(p: CreateVersion, submitter: string): PurchaseOrderVersionMsg {
  const r = p.revision ?? EMPTY_REVISION;
  return {
    versionId: p.versionId,
    workflowState: p.workflowState,
    isDraft: p.isDraft,
    currentRevisionId: r.revisionId,
    revisions: [{ revisionId: r.revisionId, submitter, createdAt: r.createdAt, orderXmlV3_4: r.orderXmlV3_4 }],
  };
}

function checkNewVersionConstraints(state: WorkflowState, isDraft: boolean, versionId: string): void {
  if (hasConstraint(state, CONSTRAINT.accepted)) {
    invalid(`Version ${versionId} cannot be created in state ${state.name}, which requires an accepted version`);
  }
  if (hasConstraint(state, CONSTRAINT.draft) && !isDraft) {
    invalid(`Version ${versionId} must be a draft to be in state ${state.name}`);
  }
}

function createPo(p: CreatePo, signer: string, ctx: TxnContext): void {
  for (const org of [p.buyerOrgId, p.sellerOrgId]) {
    if (getOrganization(ctx, org) === undefined) invalid(`Organization ${org} does not exist`);
  }
  const org = signerOrg(ctx, signer);
  requireParty(org, p.buyerOrgId, p.sellerOrgId, p.uid);
  if (getPurchaseOrder(ctx, p.uid) !== undefined) invalid(`Purchase Order already exists: ${p.uid}`);
  const wf = resolveWorkflow(p.workflowId);
  const desired = requireState(wf.po, p.workflowState);
  const versions: PurchaseOrderVersionMsg[] = [];
  const v = p.createVersionPayload;
  if (v) {
    const vState = requireState(wf.version, v.workflowState);
    if (!checkWorkflowPermission(ctx, signer, PERM.createVersion, wf.version.start, v.workflowState)) {
      invalid(
        `Agent ${signer} does not have the correct permissions for organization ${org} to create ` +
          `purchase order version ${v.versionId} with a status of ${v.workflowState}`,
      );
    }
    checkNewVersionConstraints(vState, v.isDraft, v.versionId);
    // The embedded version's first revision is attributed to the signer.
    versions.push(newVersion(v, signer));
  }
  if (!checkWorkflowPermission(ctx, signer, PERM.createPo, wf.po.start, p.workflowState)) {
    invalid(
      `Agent ${signer} does not have the correct permissions for organization ${org} to create a ` +
        `purchase order ${p.uid} with a status of ${p.workflowState}`,
    );
  }
  if (hasConstraint(desired, CONSTRAINT.closed)) invalid(`Cannot create a purchase order in state ${desired.name}`);
  if (hasConstraint(desired, CONSTRAINT.complete) && versions.length === 0) {
    invalid(`A purchase order in state ${desired.name} requires a version`);
  }
  if (hasConstraint(desired, CONSTRAINT.accepted)) {
    invalid(`A purchase order in state ${desired.name} requires an accepted version`);
  }
  upsertIn(ctx, PURCHASE_ORDERS, purchaseOrderAddress(p.uid), {
    uid: p.uid,
    workflowState: p.workflowState,
    buyerOrgId: p.buyerOrgId,
    sellerOrgId: p.sellerOrgId,
    versions,
    acceptedVersionNumber: '',
    alternateIds: p.alternateIds,
    createdAt: p.createdAt,
    isClosed: false,
    workflowId: p.workflowId,
  });
}

function createVersion(p: CreateVersion, signer: string, ctx: TxnContext): void {
  const org = signerOrg(ctx, signer);
  const po = getPurchaseOrder(ctx, p.poUid);
  if (po === undefined) invalid(`Purchase order ${p.poUid} does not exist`);
  requireParty(org, po.buyerOrgId, po.sellerOrgId, po.uid);
  if (po.versions.some((v) => v.versionId === p.versionId)) {
    invalid(`Version ${p.versionId} already exists for Purchase Order ${p.poUid}`);
  }
  const wf = resolveWorkflow(po.workflowId);
  const state = requireState(wf.version, p.workflowState);
  if (!checkWorkflowPermission(ctx, signer, PERM.createVersion, wf.version.start, p.workflowState)) {
    invalid(
      `Agent ${signer} does not have the correct permissions for organization ${org} to create ` +
        `purchase order version ${p.versionId} with a status of ${p.workflowState}`,
    );
  }
  checkNewVersionConstraints(state, p.isDraft, p.versionId);
  po.versions = [...po.versions, newVersion(p, (p.revision ?? EMPTY_REVISION).submitter)];
  upsertIn(ctx, PURCHASE_ORDERS, purchaseOrderAddress(p.poUid), po);
}

function updateVersion(p: UpdateVersion, signer: string, ctx: TxnContext): void {
  const org = signerOrg(ctx, signer);
  const po = getPurchaseOrder(ctx, p.poUid);
  if (po === undefined) invalid(`No purchase order exists: ${p.poUid}`);
  requireParty(org, po.buyerOrgId, po.sellerOrgId, po.uid);
  const version = po.versions.find((v) => v.versionId === p.versionId);
  if (version === undefined) invalid(`Cannot update version ${p.versionId} that does not exist`);
  const wf = resolveWorkflow(po.workflowId);
  checkVersionPermission(ctx, signer, org, wf, po.uid, version, p.workflowState);
  const target = requireState(wf.version, p.workflowState);
  const previous = currentState(wf.version, version.workflowState);

  // A revision identical to a stored one is re-selected; anything else is appended.
  const revision = p.revision ?? EMPTY_REVISION;
  const same = version.revisions.find((r) => sameRevision(r, revision));
  if (same !== undefined) version.currentRevisionId = same.revisionId;
  else appendRevision(version, revision);
  version.workflowState = p.workflowState;
  version.isDraft = p.isDraft;

  if (hasConstraint(target, CONSTRAINT.draft) && !p.isDraft) {
    invalid(`Version ${p.versionId} must be a draft to be in state ${target.name}`);
  }
  if (hasConstraint(target, CONSTRAINT.accepted)) {
    const poState = workflowState(wf.po, po.workflowState);
    if (!hasConstraint(poState, CONSTRAINT.accepted)) {
      invalid(`Purchase order ${po.uid} must be in an accepted state to accept version ${p.versionId}`);
    }
    if (po.acceptedVersionNumber !== p.versionId) {
      invalid(`Purchase order ${po.uid} does not name version ${p.versionId} as its accepted version`);
    }
    if (acceptedVersions(wf, po).some((v) => v.versionId !== p.versionId)) {
      invalid(`Purchase order ${po.uid} already has an accepted version`);
    }
    if (p.isDraft) invalid(`Version ${p.versionId} cannot be accepted while it is a draft`);
  } else if (hasConstraint(previous, CONSTRAINT.accepted) && po.acceptedVersionNumber === p.versionId) {
    invalid(`Version ${p.versionId} is the accepted version of purchase order ${po.uid} and cannot leave state ${previous.name}`);
  }
  upsertIn(ctx, PURCHASE_ORDERS, purchaseOrderAddress(po.uid), po);
}

function updatePo(p: UpdatePo, signer: string, ctx: TxnContext): void {
  const org = signerOrg(ctx, signer);
  const po = getPurchaseOrder(ctx, p.poUid);
  if (po === undefined) invalid(`No purchase order exists: ${p.poUid}`);
  requireParty(org, po.buyerOrgId, po.sellerOrgId, po.uid);
  for (const u of p.versionUpdates) {
    if (!po.versions.some((v) => v.versionId === u.versionId)) {
      invalid(`Cannot update version ${u.versionId} that does not exist`);
    }
  }
  const wf = resolveWorkflow(po.workflowId);
  const from = currentState(wf.po, po.workflowState);
  const perm = moveOrUpdatePermission(po.workflowState, p.workflowState, PERM.updatePo);
  if (!checkWorkflowPermission(ctx, signer, perm, from, p.workflowState)) {
    invalid(
      `Agent ${signer} does not have the correct permissions for organization ${org} to update ` +
        `purchase order ${po.uid} to a status of ${p.workflowState}`,
    );
  }
  const target = requireState(wf.po, p.workflowState);

  for (const u of p.versionUpdates) {
    const version = po.versions.find((v) => v.versionId === u.versionId) as PurchaseOrderVersionMsg;
    checkVersionPermission(ctx, signer, org, wf, po.uid, version, u.workflowState);
    const vTarget = requireState(wf.version, u.workflowState);
    // Here a revision is compared with the latest one only.
    const revision = u.revision ?? EMPTY_REVISION;
    const last = version.revisions.find((r) => toNum(r.revisionId) === lastRevisionId(version));
    if (last === undefined || !sameRevision(last, revision)) appendRevision(version, revision);
    version.workflowState = u.workflowState;
    version.isDraft = u.isDraft;
    if (hasConstraint(vTarget, CONSTRAINT.draft) && !u.isDraft) {
      invalid(`Version ${u.versionId} must be a draft to be in state ${vTarget.name}`);
    }
  }

  po.workflowState = p.workflowState;
  po.alternateIds = p.alternateIds;
  po.isClosed = p.isClosed;
  po.acceptedVersionNumber = p.acceptedVersionNumber;
  checkPoConsistency(wf, po, target);
  upsertIn(ctx, PURCHASE_ORDERS, purchaseOrderAddress(po.uid), po);
}

/** The order's state, closed flag and accepted version must agree after an update. */
function checkPoConsistency(wf: Workflow, po: PurchaseOrderMsg, target: WorkflowState): void {
  const accepted = po.acceptedVersionNumber;
  if (po.isClosed) {
    if (accepted !== '') invalid(`Purchase order ${po.uid} cannot be closed with an accepted version`);
    if (hasConstraint(target, CONSTRAINT.complete) || !hasConstraint(target, CONSTRAINT.closed)) {
      invalid(`Purchase order ${po.uid} cannot be closed in state ${target.name}`);
    }
  } else if (hasConstraint(target, CONSTRAINT.closed)) {
    invalid(`Purchase order ${po.uid} must be marked closed to be in state ${target.name}`);
  }
  if (hasConstraint(target, CONSTRAINT.accepted) && accepted === '') {
    invalid(`Purchase order ${po.uid} requires an accepted version to be in state ${target.name}`);
  }
  const inAccepted = acceptedVersions(wf, po);
  if (accepted !== '') {
    const version = po.versions.find((v) => v.versionId === accepted);
    if (version === undefined) invalid(`Accepted version ${accepted} does not exist for purchase order ${po.uid}`);
    const vState = wf.version.states.get(version.workflowState);
    if (hasConstraint(vState, CONSTRAINT.draft) || version.isDraft) {
      invalid(`Draft version ${accepted} cannot be the accepted version of purchase order ${po.uid}`);
    }
    if (!hasConstraint(vState, CONSTRAINT.accepted)) {
      invalid(`Version ${accepted} must be in an accepted state to be the accepted version of purchase order ${po.uid}`);
    }
    if (!hasConstraint(target, CONSTRAINT.accepted)) {
      invalid(`Purchase order ${po.uid} cannot have an accepted version in state ${target.name}`);
    }
    if (inAccepted.some((v) => v.versionId !== accepted)) {
      invalid(`Purchase order ${po.uid} cannot have more than one version in an accepted state`);
    }
  } else if (inAccepted.length > 0) {
    invalid(`Purchase order ${po.uid} has a version in an accepted state but no accepted version`);
  }
}

export function applyPurchaseOrder(payload: Uint8Array, signer: string, ctx: TxnContext): void {
  const p = decodeMsg<PoPayloadMsg>(G.PurchaseOrderPayload, payload, 'po payload');
  switch (p.action) {
    case PurchaseOrderAction.CREATE_PO:
      validateCreatePo(p.createPoPayload ?? EMPTY_CREATE_PO);
      break;
    case PurchaseOrderAction.UPDATE_PO:
      validateUpdatePo(p.updatePoPayload ?? EMPTY_UPDATE_PO);
      break;
    case PurchaseOrderAction.CREATE_VERSION:
      validateCreateVersion(p.createVersionPayload ?? EMPTY_CREATE_VERSION);
      break;
    case PurchaseOrderAction.UPDATE_VERSION:
      validateUpdateVersion(p.updateVersionPayload ?? EMPTY_UPDATE_VERSION);
      break;
    default:
      invalid('Invalid action');
  }
  if (toNum(p.timestamp) === 0) invalid("Payload's `timestamp` field is unset");
  switch (p.action) {
    case PurchaseOrderAction.CREATE_PO:
      return createPo(p.createPoPayload ?? EMPTY_CREATE_PO, signer, ctx);
    case PurchaseOrderAction.UPDATE_PO:
      return updatePo(p.updatePoPayload ?? EMPTY_UPDATE_PO, signer, ctx);
    case PurchaseOrderAction.CREATE_VERSION:
      return createVersion(p.createVersionPayload ?? EMPTY_CREATE_VERSION, signer, ctx);
    default:
      return updateVersion(p.updateVersionPayload ?? EMPTY_UPDATE_VERSION, signer, ctx);
  }
}

export const purchaseOrderFamily: Family = {
  name: PURCHASE_ORDER_FAMILY,
  versions: ['1', '2'],
  namespaces: [GRID_NAMESPACE],
  apply(txn: TxnInfo, ctx: TxnContext): void {
    applyPurchaseOrder(txn.payload, txn.header.signerPublicKey, ctx);
  },
};
