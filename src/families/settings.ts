/**
 * Settings (`sawtooth_settings` 1.0): on-chain configuration. Proposals by authorized
 * keys, votes when the approval threshold is above one, and `settings/update` events,
 * with the reference processor's rules and addressing.
 */
import {
  Setting,
  SettingCandidates,
  SettingProposal,
  SettingsAction,
  SettingsPayload,
  SettingVote,
  SettingVoteValue,
  decode,
  encode as pbEncode,
  type SettingCandidateMsg,
  type SettingEntryMsg,
  type SettingProposalMsg,
  type SettingsPayloadMsg,
  type SettingVoteMsg,
} from '../proto/index.js';
import { InvalidTransaction, type Family, type TxnContext, type TxnInfo } from './types.js';
import { sha256Hex } from './address.js';

export const SETTINGS_PREFIX = '000000';
const AUTH_KEYS = 'sawtooth.settings.vote.authorized_keys';
const THRESHOLD = 'sawtooth.settings.vote.approval_threshold';
const PROPOSALS = 'sawtooth.settings.vote.proposals';

const ADDRESS_PARTS = 4;
const PART_LEN = 16;

export function settingAddress(key: string): string {
  const parts = key.split('.');
  const head = parts.slice(0, ADDRESS_PARTS - 1);
  const rest = parts.slice(ADDRESS_PARTS - 1).join('.');
  const all = parts.length >= ADDRESS_PARTS ? [...head, rest] : [...parts];
  while (all.length < ADDRESS_PARTS) all.push('');
  return SETTINGS_PREFIX + all.map((p) => sha256Hex(p).slice(0, PART_LEN)).join('');
}

export function readSetting(get: (a: string) => Uint8Array | undefined, key: string): string | undefined {
  const raw = get(settingAddress(key));
  if (!raw) return undefined;
  let entries: SettingEntryMsg[];
  try {
    entries = decode(Setting, raw).entries;
  } catch {
    throw new InvalidTransaction(`Setting at ${key} is not decodable`);
  }
  return entries.find((e) => e.key === key)?.value;
}

function writeSetting(ctx: TxnContext, key: string, value: string): void {
  const address = settingAddress(key);
  const raw = ctx.get(address);
  let entries: SettingEntryMsg[] = [];
  if (raw) entries = decode(Setting, raw).entries.filter((e) => e.key !== key);
  entries.push({ key, value });
  entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  ctx.set(address, pbEncode(Setting, { entries }));
  ctx.addEvent('settings/update', [{ key: 'updated', value: key }]);
}

function splitKeys(v: string | undefined): string[] {
  return (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function readCandidates(ctx: TxnContext): SettingCandidateMsg[] {
  const b64 = readSetting((a) => ctx.get(a), PROPOSALS);
  if (!b64) return [];
  return decode(SettingCandidates, Buffer.from(b64, 'base64')).candidates;
}

function writeCandidates(ctx: TxnContext, candidates: SettingCandidateMsg[]): void {
  const bytes = pbEncode(SettingCandidates, { candidates });
  writeSetting(ctx, PROPOSALS, Buffer.from(bytes).toString('base64'));
}

function threshold(ctx: TxnContext): number {
  const t = readSetting((a) => ctx.get(a), THRESHOLD);
  if (t === undefined) return 1;
  const n = Number(t);
  if (!Number.isInteger(n)) throw new InvalidTransaction(`approval threshold ${t} is not an integer`);
  return n;
}

function validateValue(ctx: TxnContext, key: string, value: string, authorized: string[]): void {
  if (key === AUTH_KEYS && splitKeys(value).length === 0) {
    throw new InvalidTransaction(`${AUTH_KEYS} must not be empty.`);
  }
  if (key === THRESHOLD) {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new InvalidTransaction(`${THRESHOLD} ${value} must be a positive integer`);
    if (n > authorized.length) {
      throw new InvalidTransaction(`${THRESHOLD} ${n} must be less than or equal to the number of authorized keys`);
    }
  }
  void ctx;
}

function propose(txn: TxnInfo, ctx: TxnContext, data: Uint8Array, authorized: string[]): void {
  let proposal: SettingProposalMsg;
  try {
    proposal = decode(SettingProposal, data);
  } catch {
    throw new InvalidTransaction('Invalid setting proposal');
  }
  const key = proposal.setting;
  if (!key) throw new InvalidTransaction('Setting key must not be empty');
  if (key === PROPOSALS) throw new InvalidTransaction(`Setting ${PROPOSALS} is read-only`);
  if (authorized.length === 0 && key !== AUTH_KEYS) {
    throw new InvalidTransaction(`Cannot set ${key} until authorized_keys is set.`);
  }
  validateValue(ctx, key, proposal.value, key === AUTH_KEYS ? splitKeys(proposal.value) : authorized);
  const needed = threshold(ctx);
  if (needed <= 1) {
    writeSetting(ctx, key, proposal.value);
    return;
  }
  const proposalId = sha256Hex(data);
  const candidates = readCandidates(ctx);
  if (candidates.some((c) => c.proposalId === proposalId)) {
    throw new InvalidTransaction(`Duplicate proposal for ${key}`);
  }
  candidates.push({ proposalId, proposal, votes: [{ publicKey: txn.header.signerPublicKey, vote: SettingVoteValue.ACCEPT }] });
  writeCandidates(ctx, candidates);
}

function vote(txn: TxnInfo, ctx: TxnContext, data: Uint8Array, authorized: string[]): void {
  let v: SettingVoteMsg;
  try {
    v = decode(SettingVote, data);
  } catch {
    throw new InvalidTransaction('Invalid vote');
  }
  if (v.vote !== SettingVoteValue.ACCEPT && v.vote !== SettingVoteValue.REJECT) throw new InvalidTransaction('Vote must be ACCEPT or REJECT');
  const candidates = readCandidates(ctx);
  const idx = candidates.findIndex((c) => c.proposalId === v.proposalId);
  const c = candidates[idx];
  if (c === undefined) throw new InvalidTransaction(`Proposal ${v.proposalId} does not exist.`);
  const signer = txn.header.signerPublicKey;
  if (c.votes.some((r) => r.publicKey === signer)) throw new InvalidTransaction(`${signer} has already voted`);
  c.votes.push({ publicKey: signer, vote: v.vote });
  const accepts = c.votes.filter((r) => r.vote === SettingVoteValue.ACCEPT).length;
  const rejects = c.votes.filter((r) => r.vote === SettingVoteValue.REJECT).length;
  const needed = threshold(ctx);
  if (accepts >= needed) {
    writeSetting(ctx, c.proposal.setting, c.proposal.value);
    candidates.splice(idx, 1);
  } else if (rejects >= needed || rejects + accepts >= authorized.length) {
    candidates.splice(idx, 1);
  }
  writeCandidates(ctx, candidates);
}

export function applySettings(txn: TxnInfo, ctx: TxnContext): void {
  let payload: SettingsPayloadMsg;
  try {
    payload = decode(SettingsPayload, txn.payload);
  } catch {
    throw new InvalidTransaction('Invalid settings payload');
  }
  const authorized = splitKeys(readSetting((a) => ctx.get(a), AUTH_KEYS));
  const signer = txn.header.signerPublicKey;
  if (authorized.length > 0 && !authorized.includes(signer)) {
    throw new InvalidTransaction(`${signer} is not authorized to change settings`);
  }
  if (payload.action === SettingsAction.PROPOSE) propose(txn, ctx, payload.data, authorized);
  else if (payload.action === SettingsAction.VOTE) vote(txn, ctx, payload.data, authorized);
  else throw new InvalidTransaction(`'action' must be one of {PROPOSE, VOTE}`);
}

/** Inputs and outputs a settings proposal touches, as sawset builds them. */
export function settingsTxnAddresses(key: string): { inputs: string[]; outputs: string[] } {
  return {
    inputs: [settingAddress(PROPOSALS), settingAddress(AUTH_KEYS), settingAddress(THRESHOLD), settingAddress(key)],
    outputs: [settingAddress(PROPOSALS), settingAddress(key)],
  };
}

export function proposalPayload(key: string, value: string, nonce = ''): Uint8Array {
  const data = pbEncode(SettingProposal, { setting: key, value, nonce });
  return pbEncode(SettingsPayload, { action: SettingsAction.PROPOSE, data });
}

export function votePayload(proposalId: string, accept: boolean): Uint8Array {
  const data = pbEncode(SettingVote, { proposalId, vote: accept ? SettingVoteValue.ACCEPT : SettingVoteValue.REJECT });
  return pbEncode(SettingsPayload, { action: SettingsAction.VOTE, data });
}

export const settings: Family = {
  name: 'sawtooth_settings',
  versions: ['1.0'],
  namespaces: [SETTINGS_PREFIX],
  apply: applySettings,
};
