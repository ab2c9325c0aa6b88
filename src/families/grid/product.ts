/**
 * Products: GS1 trade items keyed by GTIN, owned by a Pike organization that holds the
 * GS1 company prefix, with properties checked against the `gs1_product` schema.
 */
import type { Family, TxnContext, TxnInfo } from '../types.js';
import { GRID_NAMESPACE, productAddress } from './addressing.js';
import {
  G,
  ProductAction,
  ProductNamespace,
  decodeMsg,
  findIn,
  invalid,
  removeFrom,
  toNum,
  upsertIn,
  type Int64,
  type ListSpec,
  type OrganizationMsg,
  type ProductMsg,
  type PropertyValueMsg,
} from './common.js';
import { validateGtin } from './gs1.js';
import { checkPermission, getOrganization } from './pike-state.js';
import { getSchema, validateProperties } from './schema.js';

export const PRODUCT_FAMILY = 'grid_product';
export const GS1_PRODUCT_SCHEMA = 'gs1_product';
export const GS1_COMPANY_PREFIX = 'gs1_company_prefix';

export const PRODUCTS: ListSpec<ProductMsg> = { type: G.ProductList, field: 'entries', key: (p) => p.productId };

interface ProductActionMsg {
  productNamespace: number;
  productId: string;
  owner?: string;
  properties?: PropertyValueMsg[];
}
interface ProductPayloadMsg {
  action: number;
  timestamp: Int64;
  productCreate?: ProductActionMsg | null;
  productUpdate?: ProductActionMsg | null;
  productDelete?: ProductActionMsg | null;
}

const EMPTY: ProductActionMsg = { productNamespace: ProductNamespace.UNSET_TYPE, productId: '', owner: '', properties: [] };

/** Rust's `{:?}` of an organization's alternate ids, as upstream's messages print them. */
export function debugAlternateIds(org: OrganizationMsg): string {
  const items = org.alternateIds.map((a) => `AlternateId { id_type: ${JSON.stringify(a.idType)}, id: ${JSON.stringify(a.id)} }`);
  return `[${items.join(', ')}]`;
}

function getProduct(ctx: TxnContext, id: string): ProductMsg | undefined {
  return findIn(ctx, PRODUCTS, productAddress(id), id);
}

function checkNamespace(ns: number): void {
  if (ns !== ProductNamespace.GS1) invalid('Invalid product namespace enum for product');
}

function checkSchema(ctx: TxnContext, properties: PropertyValueMsg[]): void {
  const schema = getSchema(ctx, GS1_PRODUCT_SCHEMA);
  if (schema === undefined) invalid(`${GS1_PRODUCT_SCHEMA} schema has not been defined`);
  validateProperties(schema, properties, 'gs1');
}

function createProduct(p: ProductActionMsg, signer: string, ctx: TxnContext): void {
  const owner = p.owner ?? '';
  const properties = p.properties ?? [];
  if (p.productId === '') invalid('product_id cannot be empty string');
  if (owner === '') invalid('Owner cannot be empty string');
  checkPermission(ctx, signer, 'product::can-create-product', owner);
  if (getProduct(ctx, p.productId) !== undefined) invalid(`Product already exists: ${p.productId}`);
  checkNamespace(p.productNamespace);
  validateGtin(p.productId);
  const org = getOrganization(ctx, owner);
  if (org === undefined) invalid(`The Agent's organization does not exist: ${signer}`);
  const prefix = org.alternateIds.find((a) => a.idType === GS1_COMPANY_PREFIX);
  if (prefix === undefined) {
    invalid(`The agents organization does not have the gs1_company_prefix prefix: ${debugAlternateIds(org)}`);
  }
  if (!p.productId.includes(prefix.id)) {
    invalid(`The agents organization does not own the GS1 company prefix in the GTIN product_id: ${debugAlternateIds(org)}`);
  }
  checkSchema(ctx, properties);
  upsertIn(ctx, PRODUCTS, productAddress(p.productId), {
    productId: p.productId,
    productNamespace: p.productNamespace,
    owner,
    properties,
  });
}

function updateProduct(p: ProductActionMsg, signer: string, ctx: TxnContext): void {
  checkNamespace(p.productNamespace);
  const product = getProduct(ctx, p.productId);
  if (product === undefined) invalid(`No product exists: ${p.productId}`);
  checkPermission(ctx, signer, 'product::can-update-product', product.owner);
  validateGtin(p.productId);
  const properties = p.properties ?? [];
  checkSchema(ctx, properties);
  // Properties are replaced wholesale; the owner never changes.
  product.properties = properties;
  upsertIn(ctx, PRODUCTS, productAddress(p.productId), product);
}

function deleteProduct(p: ProductActionMsg, signer: string, ctx: TxnContext): void {
  checkNamespace(p.productNamespace);
  const product = getProduct(ctx, p.productId);
  if (product === undefined) invalid(`No product exists: ${p.productId}`);
  checkPermission(ctx, signer, 'product::can-delete-product', product.owner);
  validateGtin(p.productId);
  removeFrom(ctx, PRODUCTS, productAddress(p.productId), p.productId);
}

export function applyProduct(payload: Uint8Array, signer: string, ctx: TxnContext): void {
  const p = decodeMsg<ProductPayloadMsg>(G.ProductPayload, payload, 'product payload');
  if (p.action < ProductAction.PRODUCT_CREATE || p.action > ProductAction.PRODUCT_DELETE) invalid('Invalid action');
  if (toNum(p.timestamp) === 0) invalid('Timestamp is not set');
  switch (p.action) {
    case ProductAction.PRODUCT_CREATE:
      return createProduct(p.productCreate ?? EMPTY, signer, ctx);
    case ProductAction.PRODUCT_UPDATE:
      return updateProduct(p.productUpdate ?? EMPTY, signer, ctx);
    default:
      return deleteProduct(p.productDelete ?? EMPTY, signer, ctx);
  }
}

export const productFamily: Family = {
  name: PRODUCT_FAMILY,
  versions: ['1', '2'],
  namespaces: [GRID_NAMESPACE],
  apply(txn: TxnInfo, ctx: TxnContext): void {
    applyProduct(txn.payload, txn.header.signerPublicKey, ctx);
  },
};
