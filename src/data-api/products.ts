/**
 * Products (GS1 trade items): list, create (`{data: [Product]}`), fetch, update
 * (properties replaced as a whole) and delete by `product_id`, a GTIN-12/13/14 whose
 * check digit is verified before anything is submitted.
 */
import { createRoute, deleteRoute, listRoute } from './record-routes.js';
import { gridKeys } from '../ledger/read-model/keys.js';
import { gtinError } from '../families/grid/gs1.js';
import type { ProductRecord } from '../ledger/read-model/records.js';
import type { DataBackend } from './backend.js';
import { checkPropertyValues } from './properties.js';
import { knownOrg, sameService, withService } from './records.js';
import { ok, type DataRouter } from './router.js';
import { dataReplies } from './replies.js';
import { submitActions, writeQuery } from './submit.js';
import { bad, checkShape, objectBody, reqString, samePath, type Shape } from './validate.js';
import { dataErrors } from './errors.js';

const CREATE: Shape = {
  product_id: reqString,
  product_namespace: 'any',
  owner: reqString,
  properties: 'array',
  service_id: 'string',
  last_updated: 'integer',
  product_address: 'string',
};
const UPDATE: Shape = { ...CREATE, product_id: 'string', owner: 'string' };

function stored(be: DataBackend, id: string): ProductRecord {
  const p = be.rm.get('product', gridKeys.product(id));
  if (p === undefined) throw dataErrors.productNotFound({ id });
  return p;
}

export function registerProducts(r: DataRouter): void {
  listRoute(r, '/product', dataReplies.products, 'product');

  r.route({
    method: 'get',
    path: '/product/:product_id',
    reply: dataReplies.product,
    handler: ({ be, params }) => ok(withService(be, stored(be, params.product_id))),
  });

  createRoute(r, '/product', (be) => ({
    shape: CREATE,
    idField: 'product_id',
    invalidId: gtinError,
    taken: (id) => (be.rm.has('product', gridKeys.product(id)) ? `product ${id} already exists` : undefined),
    action: (o, id, path) => {
      knownOrg(be, o.owner, `${path}.owner`);
      const properties = checkPropertyValues(o.properties, `${path}.properties`);
      return { action: 'create_product', product_id: id, product_namespace: o.product_namespace, owner: o.owner, properties };
    },
  }));

  r.route({
    method: 'put',
    path: '/product/:product_id',
    reply: dataReplies.submitted,
    body: (req) => checkShape(objectBody(req), UPDATE, ''),
    query: writeQuery,
    handler: ({ be, params, body: o, query }) => {
      const id = params.product_id;
      samePath(o, 'product_id', id, '');
      sameService(be, o.service_id, 'service_id');
      const p = stored(be, id);
      if (o.owner !== undefined && o.owner !== p.owner) throw bad(`\`owner\` cannot change (the product belongs to ${p.owner})`);
      const properties = checkPropertyValues(o.properties, 'properties');
      const signer = be.signers.pick(query.signer);
      return submitActions(
        be,
        signer,
        [{ action: { action: 'update_product', product_id: id, product_namespace: o.product_namespace, properties }, path: '' }],
        query.wait,
      );
    },
  });

  deleteRoute(r, '/product/:product_id', (be, { product_id }) => {
    stored(be, product_id);
    return { action: 'delete_product', product_id };
  });
}
