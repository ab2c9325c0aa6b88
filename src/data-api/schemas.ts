/**
 * Schemas: list, create (`{data: [Schema]}`), fetch and update by name. The ledger only
 * appends definitions to a schema: an update body may hold the whole list, and the
 * definitions the schema already has unchanged are left out of the transaction.
 */
import { createRoute, listRoute } from './record-routes.js';
import { gridKeys } from '../ledger/read-model/keys.js';
import { checkPropertyDefinitions, newDefinitions } from './properties.js';
import { knownOrg, sameService, withService } from './records.js';
import { ok, type DataRouter } from './router.js';
import { dataReplies } from './replies.js';
import { submitActions, writeQuery } from './submit.js';
import { bad, checkShape, objectBody, reqString, samePath, type Shape } from './validate.js';
import { dataErrors } from './errors.js';

const CREATE: Shape = {
  name: reqString,
  description: 'string',
  owner: reqString,
  properties: { kind: 'array', required: true },
  service_id: 'string',
  last_updated: 'integer',
};
const UPDATE: Shape = { ...CREATE, name: 'string', owner: 'string' };

export function registerSchemas(r: DataRouter): void {
  listRoute(r, '/schema', dataReplies.schemas, 'schema');

  r.route({
    method: 'get',
    path: '/schema/:schema_name',
    reply: dataReplies.schema,
    handler: ({ be, params }) => {
      const s = be.rm.get('schema', gridKeys.schema(params.schema_name));
      if (s === undefined) throw dataErrors.schemaNotFound({ name: params.schema_name });
      return ok(withService(be, s));
    },
  });

  createRoute(r, '/schema', (be) => ({
    shape: CREATE,
    idField: 'name',
    taken: (name) => (be.rm.has('schema', gridKeys.schema(name)) ? `schema ${name} already exists` : undefined),
    action: (o, name, path) => {
      knownOrg(be, o.owner, `${path}.owner`);
      const properties = checkPropertyDefinitions(o.properties, `${path}.properties`);
      if (properties.length === 0) throw bad(`\`${path}.properties\` must not be empty`);
      return { action: 'create_schema', name, description: o.description, owner: o.owner, properties };
    },
  }));

  r.route({
    method: 'put',
    path: '/schema/:schema_name',
    reply: dataReplies.submitted,
    body: (req) => checkShape(objectBody(req), UPDATE, ''),
    query: writeQuery,
    handler: ({ be, params, body: o, query }) => {
      const name = params.schema_name;
      samePath(o, 'name', name, '');
      sameService(be, o.service_id, 'service_id');
      const stored = be.rm.get('schema', gridKeys.schema(name));
      if (stored === undefined) throw dataErrors.schemaNotFound({ name });
      if (o.owner !== undefined && o.owner !== stored.owner) throw bad(`\`owner\` cannot change (the schema belongs to ${stored.owner})`);
      const properties = newDefinitions(checkPropertyDefinitions(o.properties, 'properties'), stored.properties);
      if (properties.length === 0) throw bad('`properties` adds no new property definition to the schema');
      const signer = be.signers.pick(query.signer);
      return submitActions(be, signer, [{ action: { action: 'update_schema', name, owner: stored.owner, properties }, path: '' }], query.wait);
    },
  });
}
