/**
 * Locations: list, create (`{data: [Location]}`), fetch, update (properties replaced as a
 * whole) and delete by `location_id`, a 13-digit GLN whose check digit is verified
 * before anything is submitted. `owner` is an organization id or, as the spec's shape
 * types it, an agent's public key standing for that agent's organization; the ledger
 * stores and reads return the organization id.
 */
import { createRoute, deleteRoute, listRoute } from './record-routes.js';
import { gridKeys } from '../ledger/read-model/keys.js';
import { isValidGln } from '../families/grid/gs1.js';
import type { LocationRecord } from '../ledger/read-model/records.js';
import type { DataBackend } from './backend.js';
import { checkPropertyValues } from './properties.js';
import { sameService, withService } from './records.js';
import { ok, type DataRouter } from './router.js';
import { dataReplies } from './replies.js';
import { PUBLIC_KEY_RE } from './signers.js';
import { submitActions, writeQuery } from './submit.js';
import { bad, checkShape, objectBody, reqString, samePath, type Shape } from './validate.js';
import { dataErrors } from './errors.js';

const CREATE: Shape = {
  location_id: reqString,
  location_namespace: 'any',
  owner: reqString,
  properties: 'array',
  service_id: 'string',
  last_updated: 'integer',
};
const UPDATE: Shape = { ...CREATE, location_id: 'string', owner: 'string' };

function stored(be: DataBackend, id: string): LocationRecord {
  const l = be.rm.get('location', gridKeys.location(id));
  if (l === undefined) throw dataErrors.locationNotFound({ id });
  return l;
}

/** The organization an `owner` names: an organization id, or an agent's public key. */
function ownerOrg(be: DataBackend, owner: unknown, path: string): string {
  const id = owner as string;
  if (be.rm.has('organization', gridKeys.organization(id))) return id;
  if (PUBLIC_KEY_RE.test(id)) {
    const ref = be.rm.get('agentByKey', gridKeys.agentByKey(id));
    const agent = ref === undefined ? undefined : be.rm.get('agent', ref.key);
    if (agent !== undefined) return agent.org_id;
    throw bad(`\`${path}\`: ${id} is neither an organization nor an agent's public key`);
  }
  throw bad(`\`${path}\`: unknown organization ${id}`);
}

export function registerLocations(r: DataRouter): void {
  listRoute(r, '/location', dataReplies.locations, 'location');

  r.route({
    method: 'get',
    path: '/location/:location_id',
    reply: dataReplies.location,
    handler: ({ be, params }) => ok(withService(be, stored(be, params.location_id))),
  });

  createRoute(r, '/location', (be) => ({
    shape: CREATE,
    idField: 'location_id',
    invalidId: (id) => (isValidGln(id) ? undefined : `Invalid GLN: ${id} (13 digits, the last a GS1 check digit)`),
    taken: (id) => (be.rm.has('location', gridKeys.location(id)) ? `location ${id} already exists` : undefined),
    action: (o, id, path) => {
      const owner = ownerOrg(be, o.owner, `${path}.owner`);
      const properties = checkPropertyValues(o.properties, `${path}.properties`);
      return { action: 'create_location', location_id: id, location_namespace: o.location_namespace, owner, properties };
    },
  }));

  r.route({
    method: 'put',
    path: '/location/:location_id',
    reply: dataReplies.submitted,
    body: (req) => checkShape(objectBody(req), UPDATE, ''),
    query: writeQuery,
    handler: ({ be, params, body: o, query }) => {
      const id = params.location_id;
      samePath(o, 'location_id', id, '');
      sameService(be, o.service_id, 'service_id');
      const l = stored(be, id);
      if (o.owner !== undefined && o.owner !== l.owner && ownerOrg(be, o.owner, 'owner') !== l.owner) {
        throw bad(`\`owner\` cannot change (the location belongs to ${l.owner})`);
      }
      const properties = checkPropertyValues(o.properties, 'properties');
      const signer = be.signers.pick(query.signer);
      return submitActions(
        be,
        signer,
        [{ action: { action: 'update_location', location_id: id, location_namespace: o.location_namespace, properties }, path: '' }],
        query.wait,
      );
    },
  });

  deleteRoute(r, '/location/:location_id', (be, { location_id }) => {
    stored(be, location_id);
    return { action: 'delete_location', location_id };
  });
}
