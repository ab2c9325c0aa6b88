/**
 * State addresses of the supply-chain families (70 hex chars, all under `621dee`).
 * Each function reproduces upstream's derivation so that the same writes land at the
 * same addresses.
 */
import { sha512Hex } from './common.js';

export const GRID_NAMESPACE = '621dee';
export const SCHEMA_PREFIX = '621dee01';
export const PRODUCT_PREFIX = '621dee02';
export const LOCATION_PREFIX = '621dee04';
export const PIKE_PREFIX = '621dee05';
export const PO_PREFIX = '621dee06';

export const PIKE_AGENT_PREFIX = '621dee0500';
export const PIKE_ORG_PREFIX = '621dee0501';
export const PIKE_ROLE_PREFIX = '621dee0502';
export const PIKE_ALT_ID_PREFIX = '621dee0503';
export const PO_ENTRY_PREFIX = '621dee0600';
export const PO_ALT_ID_PREFIX = '621dee0601';
/** GS1 product addresses: `621dee` + `02` + `01` (GS1 namespace). */
export const PRODUCT_GS1_PREFIX = '621dee0201';
export const LOCATION_GS1_PREFIX = '621dee0401';

export function agentAddress(publicKey: string): string {
  return PIKE_AGENT_PREFIX + sha512Hex(publicKey).slice(0, 60);
}

export function organizationAddress(orgId: string): string {
  return PIKE_ORG_PREFIX + sha512Hex(orgId).slice(0, 60);
}

export function roleAddress(orgId: string, name: string): string {
  return PIKE_ROLE_PREFIX + sha512Hex(`${orgId}.${name}`).slice(0, 60);
}

export function alternateIdAddress(idType: string, id: string): string {
  return PIKE_ALT_ID_PREFIX + sha512Hex(`${idType}:${id}`).slice(0, 60);
}

export function schemaAddress(name: string): string {
  return SCHEMA_PREFIX + sha512Hex(name).slice(0, 62);
}

/** The GTIN is left-padded with zeros to 14 digits. Not a valid address for a bad GTIN. */
export function productAddress(gtin: string): string {
  return `${PRODUCT_GS1_PREFIX}${'0'.repeat(44)}${gtin.padStart(14, '0')}00`;
}

/** The GLN (13 chars) is embedded unpadded. Not a valid address for a bad GLN. */
export function locationAddress(gln: string): string {
  return `${LOCATION_GS1_PREFIX}${'0'.repeat(45)}${gln}00`;
}

export function purchaseOrderAddress(uid: string): string {
  return PO_ENTRY_PREFIX + sha512Hex(uid).slice(0, 60);
}

/** Defined upstream for a purchase-order alternate-id index; no contract writes it. */
export function purchaseOrderAlternateIdAddress(uid: string, idType: string, id: string): string {
  return PO_ALT_ID_PREFIX + sha512Hex(`${uid}:${idType}:${id}`).slice(0, 60);
}

/** Sabre's own registries, which a Sabre-wrapped transaction lists among its inputs. */
export const SABRE_NAMESPACE_REGISTRY_PREFIX = '00ec00';
export const SABRE_CONTRACT_REGISTRY_PREFIX = '00ec01';
export const SABRE_CONTRACT_PREFIX = '00ec02';

export function sabreContractRegistryAddress(name: string): string {
  return SABRE_CONTRACT_REGISTRY_PREFIX + sha512Hex(name).slice(0, 64);
}

export function sabreContractAddress(name: string, version: string): string {
  return SABRE_CONTRACT_PREFIX + sha512Hex(`${name},${version}`).slice(0, 64);
}

export function sabreNamespaceRegistryAddress(prefix: string): string {
  return SABRE_NAMESPACE_REGISTRY_PREFIX + sha512Hex(prefix.slice(0, 6)).slice(0, 64);
}
