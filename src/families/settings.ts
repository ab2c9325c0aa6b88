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

/**
 * A string as the reference processor (Rust) quotes it in its messages (`{:?}`): in double
 * quotes, with quotes and backslashes escaped.
 */
const quoted = (v: string): string => JSON.stringify(v);

/** Stores `value` under `key`: the entry is replaced where it stands, or appended (the reference processor's order). */
function writeSetting(ctx: TxnContext, key: string, value: string): void {
  const address = settingAddress(key);
  const raw = ctx.get(address);
  const entries: SettingEntryMsg[] = raw ? decode(Setting, raw).entries : [];
  const at = entries.findIndex((e) => e.key === key);
  if (at >= 0) entries[at] = { key, value };
  else entries.push({ key, value });
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

/** A 32-bit integer as Rust's `str::parse::<i32>` reads one (an optional sign, digits only), or undefined. */
export function parseI32(v: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(v)) return undefined;
  const n = Number(v);
  return n >= -(2 ** 31) && n < 2 ** 31 ? n : undefined;
}

function threshold(ctx: TxnContext): number {
  const t = readSetting((a) => ctx.get(a), THRESHOLD);
  if (t === undefined) return 1;
  const n = parseI32(t);
  // The reference processor answers INTERNAL_ERROR here (retried for ever); INVALID ends it.
  if (n === undefined) throw new InvalidTransaction(`Failed to parse ${THRESHOLD} value`);
  return n;
}

/** The reference processor's checks of a proposed value, in its order and words (any threshold that parses and does not exceed the keys). */
function validateValue(authorized: string[], key: string, value: string): void {
  if (authorized.length === 0 && key !== AUTH_KEYS) {
    throw new InvalidTransaction(`Cannot set ${quoted(key)} until authorized_keys is set.`);
  }
  if (key === AUTH_KEYS && splitKeys(value).length === 0) throw new InvalidTransaction('authorized_keys must not be empty.');
  if (key === THRESHOLD) {
    const n = parseI32(value);
    if (n === undefined) throw new InvalidTransaction('approval_threshold must be an integer');
    if (n > authorized.length) throw new InvalidTransaction('approval_threshold must be less than or equal to number of authorized_keys');
  }
  if (key === PROPOSALS) throw new InvalidTransaction(`Setting ${PROPOSALS} is read-only`);
}

function unpack<T>(type: Parameters<typeof decode<T>>[0], data: Uint8Array): T {
  try {
    return decode(type, data);
  } catch {
    // INTERNAL_ERROR in the reference processor (retried for ever); INVALID here.
    throw new InvalidTransaction('Failed to unmarshal SettingsTransaction');
  }
}

function propose(txn: TxnInfo, ctx: TxnContext, data: Uint8Array, authorized: string[]): void {
  const proposal: SettingProposalMsg = unpack(SettingProposal, data);
  const proposalId = sha256Hex(data);
  const needed = threshold(ctx);
  validateValue(authorized, proposal.setting, proposal.value);
  if (needed <= 1) {
    writeSetting(ctx, proposal.setting, proposal.value);
    return;
  }
  const candidates = readCandidates(ctx);
  if (candidates.some((c) => c.proposalId === proposalId)) {
    throw new InvalidTransaction(`Duplicate proposal for ${quoted(proposal.setting)}`);
  }
  candidates.push({ proposalId, proposal, votes: [{ publicKey: txn.header.signerPublicKey, vote: SettingVoteValue.ACCEPT }] });
  writeCandidates(ctx, candidates);
}

function vote(txn: TxnInfo, ctx: TxnContext, data: Uint8Array, authorized: string[]): void {
  const v: SettingVoteMsg = unpack(SettingVote, data);
  const candidates = readCandidates(ctx);
  const idx = candidates.findIndex((c) => c.proposalId === v.proposalId);
  const c = candidates[idx];
  if (c === undefined) throw new InvalidTransaction(`Proposal ${quoted(v.proposalId)} does not exist`);
  const signer = txn.header.signerPublicKey;
  if (c.votes.some((r) => r.publicKey === signer)) throw new InvalidTransaction(`${quoted(signer)} already has voted`);
  c.votes.push({ publicKey: signer, vote: v.vote });
  if (c.votes.some((r) => r.vote !== SettingVoteValue.ACCEPT && r.vote !== SettingVoteValue.REJECT)) {
    throw new InvalidTransaction('Transaction type unset');
  }
  const accepts = c.votes.filter((r) => r.vote === SettingVoteValue.ACCEPT).length;
  const rejects = c.votes.length - accepts;
  const needed = threshold(ctx);
  if (accepts >= needed) {
    writeSetting(ctx, c.proposal.setting, c.proposal.value);
    candidates.splice(idx, 1);
  } else if (rejects >= needed || rejects + accepts === authorized.length) {
    candidates.splice(idx, 1);
  }
  writeCandidates(ctx, candidates);
}

/** The reference processor's rules and messages (Sawtooth 1.2's settings processor). */
export function applySettings(txn: TxnInfo, ctx: TxnContext): void {
  const authorized = splitKeys(readSetting((a) => ctx.get(a), AUTH_KEYS));
  const signer = txn.header.signerPublicKey;
  if (authorized.length > 0 && !authorized.includes(signer)) {
    throw new InvalidTransaction(`${quoted(signer)} is not authorized to change settings`);
  }
  const payload: SettingsPayloadMsg = unpack(SettingsPayload, txn.payload);
  if (payload.action === SettingsAction.PROPOSE) propose(txn, ctx, payload.data, authorized);
  else if (payload.action === SettingsAction.VOTE) vote(txn, ctx, payload.data, authorized);
  else throw new InvalidTransaction("'action' must be one of {PROPOSE, VOTE} in 'Ballot' mode");
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
