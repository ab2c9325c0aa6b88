/**
 * Helpers for the data API tests: JSON calls over real HTTP, agent keys the node may
 * sign with (`?signer=`), GS1 identifiers with valid check digits, client-signed
 * (optionally Sabre-wrapped) supply-chain batches, and a two-organization fixture.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Signer, randomPrivateKey } from '../../src/crypto/secp256k1.js';
import { buildBatch, buildBatchList, buildTransaction } from '../../src/ledger/build.js';
import { buildGridTransaction, wrapInSabre, type GridActionInput } from '../../src/families/grid/index.js';
import { gs1CheckDigit } from '../../src/families/grid/gs1.js';

export interface Res {
  status: number;
  json: any;
}

export class Api {
  constructor(readonly base: string) {}

  async call(method: string, path: string, body?: unknown, raw?: string): Promise<Res> {
    const init: RequestInit = { method };
    if (raw !== undefined || body !== undefined) {
      init.body = raw ?? JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    const r = await fetch(path.startsWith('http') ? path : this.base + path, init);
    const text = await r.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: r.status, json };
  }
  get(path: string): Promise<Res> {
    return this.call('GET', path);
  }
  post(path: string, body: unknown): Promise<Res> {
    return this.call('POST', path, body);
  }
  put(path: string, body: unknown): Promise<Res> {
    return this.call('PUT', path, body);
  }
  del(path: string): Promise<Res> {
    return this.call('DELETE', path);
  }
}

/** `path?wait=10[&signer=<key>]` */
export function w(path: string, signer?: Signer, seconds = 10): string {
  const sep = path.includes('?') ? '&' : '?';
  return `${path}${sep}wait=${seconds}${signer ? `&signer=${signer.publicKey}` : ''}`;
}

/** A new key the node may sign with: written to `<data dir>/keys/agents/<name>.priv`. */
export function agentKey(dataDir: string, name: string): Signer {
  const dir = join(dataDir, 'keys', 'agents');
  mkdirSync(dir, { recursive: true });
  const hex = randomPrivateKey();
  writeFileSync(join(dir, `${name}.priv`), `${hex}\n`, { mode: 0o600 });
  return new Signer(hex);
}

export function newKey(): Signer {
  return new Signer(randomPrivateKey());
}

export const withCheck = (body: string): string => body + String(gs1CheckDigit(body));
export const PREFIX_A = '0614141';
export const PREFIX_B = '0012345';
/** GTIN-13 of company A, item n. */
export const gtin = (n: number, prefix = PREFIX_A): string => withCheck(prefix + String(n).padStart(12 - prefix.length, '0'));
/** GLN of company A, location n. */
export const gln = (n: number, prefix = PREFIX_A): string => withCheck(prefix + String(n).padStart(12 - prefix.length, '0'));

/** A client-signed BatchList of one batch holding `actions`, plain or Sabre-wrapped. */
export function clientBatch(signer: Signer, actions: GridActionInput[], sabre = false): { id: string; body: Buffer } {
  const txns = actions.map((a) => {
    const tx = buildGridTransaction(a, { signer: signer.publicKey });
    return buildTransaction(signer, sabre ? wrapInSabre(tx) : tx);
  });
  const batch = buildBatch(signer, txns);
  return { id: batch.id, body: Buffer.from(buildBatchList([batch])) };
}

export async function postProtobuf(url: string, body: Uint8Array, query = ''): Promise<Res> {
  const r = await fetch(`${url}/batches${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream' },
    body: Buffer.from(body),
  });
  const text = await r.text();
  return { status: r.status, json: JSON.parse(text) };
}

export const PRODUCT_SCHEMA = {
  name: 'gs1_product',
  owner: 'acme',
  description: 'GS1 product data',
  properties: [
    { name: 'GDSN_3_1', data_type: 'STRING', required: true, description: 'trade item XML' },
    { name: 'weight', data_type: 'NUMBER', number_exponent: -3, description: 'kg' },
  ],
};

export const LOCATION_SCHEMA = {
  name: 'gs1_location',
  owner: 'acme',
  description: 'GS1 location data',
  properties: [
    { name: 'locationDescription', data_type: 'STRING', required: true },
    { name: 'locationType', data_type: 'ENUM', required: true, enum_options: ['ShipTo', 'BillTo', 'ShipFrom'] },
    { name: 'latLong', data_type: 'LAT_LONG' },
    { name: 'open', data_type: 'BOOLEAN' },
  ],
};

export const CATALOG_PERMISSIONS = [
  'schema::can-create-schema',
  'schema::can-update-schema',
  'product::can-create-product',
  'product::can-update-product',
  'product::can-delete-product',
  'location::can-create-location',
  'location::can-update-location',
  'location::can-delete-location',
];

/**
 * Organization `acme` (admin: the node's key, which also gets a `catalog` role) with the
 * GS1 company prefix PREFIX_A, and the two GS1 schemas. Each step waits for its commit.
 */
export async function acmeWithSchemas(api: Api): Promise<void> {
  const steps: Array<[string, unknown]> = [
    ['/organization', { data: [{ id: 'acme', name: 'Acme Corp', alternate_ids: [`gs1_company_prefix:${PREFIX_A}`] }] }],
    ['/role/acme', { data: [{ name: 'catalog', description: 'Catalog data', permissions: CATALOG_PERMISSIONS }] }],
  ];
  for (const [path, body] of steps) await expectCommitted(api.post(w(path), body), path);
  const nodeKey = (await api.get('/organization/acme/agent')).json.data[0].public_key as string;
  await expectCommitted(api.put(w(`/organization/acme/agent/${nodeKey}`), { roles: ['admin', 'catalog'] }), 'node key gets catalog');
  await expectCommitted(api.post(w('/schema'), { data: [PRODUCT_SCHEMA, LOCATION_SCHEMA] }), 'schemas');
}

export async function expectCommitted(p: Promise<Res>, what: string): Promise<Res> {
  const r = await p;
  if (r.status !== 200 || r.json.status !== 'COMMITTED') throw new Error(`${what}: ${r.status} ${JSON.stringify(r.json)}`);
  return r;
}
