/**
 * Organizations: list, create (`{data: [Organization]}`), fetch, update. Pike makes the
 * signer of a create the new organization's `admin` agent, and a key can be an agent of
 * one organization only: one organization per create call, by a signer that is not an
 * agent yet (the node's key, or an agent key chosen with `signer`).
 */
import { gridKeys } from '../ledger/read-model/keys.js';
import { listBody, parsePage } from './paging.js';
import { plainJson, sameService, withService } from './records.js';
import { ok, type DataRouter } from './router.js';
import { dataReplies } from './replies.js';
import { submitActions, type Planned, writeQuery } from './submit.js';
import { bad, checkId, checkShape, dataItems, objectBody, reqString, samePath, type Shape } from './validate.js';
import { dataErrors } from './errors.js';

const CREATE: Shape = {
  id: reqString,
  name: reqString,
  alternate_ids: 'array',
  metadata: 'any',
  locations: 'strings',
  service_id: 'string',
  last_updated: 'integer',
};
const UPDATE: Shape = { ...CREATE, id: 'string', name: 'string' };

export function registerOrganizations(r: DataRouter): void {
  r.route({
    method: 'get',
    path: '/organization',
    reply: dataReplies.organizations,
    query: parsePage,
    handler: ({ req, be, query: page }) => {
      return ok(listBody(req, page, be.rm.page('organization', '', page.offset, page.limit), plainJson(be)));
    },
  });

  r.route({
    method: 'get',
    path: '/organization/:id',
    reply: dataReplies.organization,
    handler: ({ be, params }) => {
      const org = be.rm.get('organization', gridKeys.organization(params.id));
      if (org === undefined) throw dataErrors.organizationNotFound({ id: params.id });
      return ok(withService(be, org));
    },
  });

  r.route({
    method: 'post',
    path: '/organization',
    reply: dataReplies.submitted,
    body: dataItems,
    query: writeQuery,
    handler: ({ be, body: items, query }) => {
      const signer = be.signers.pick(query.signer);
      if (items.length > 1) {
        throw bad(
          "`data`: one organization per request: its signer becomes the organization's admin agent, and a key is an agent of one organization only",
        );
      }
      const o = checkShape(items[0], CREATE, 'data[0]');
      sameService(be, o.service_id, 'data[0].service_id');
      const id = o.id as string;
      checkId(id, 'data[0].id');
      if (be.rm.has('organization', gridKeys.organization(id))) throw bad(`\`data[0].id\`: organization ${id} already exists`);
      const agent = be.rm.get('agent', be.rm.get('agentByKey', gridKeys.agentByKey(signer.publicKey))?.key ?? '');
      if (agent !== undefined) {
        throw bad(`\`signer\`: ${signer.publicKey} is already an agent of organization ${agent.org_id}; create the organization with another signer`);
      }
      const planned: Planned[] = [{ action: { ...o, action: 'create_organization' }, path: 'data[0]' }];
      // Pike creates organizations without locations: set them in the same batch.
      if (Array.isArray(o.locations) && o.locations.length > 0) {
        planned.push({ action: { action: 'update_organization', id, locations: o.locations }, path: 'data[0]' });
      }
      return submitActions(be, signer, planned, query.wait);
    },
  });

  r.route({
    method: 'put',
    path: '/organization/:id',
    reply: dataReplies.submitted,
    body: (req) => checkShape(objectBody(req), UPDATE, ''),
    query: writeQuery,
    handler: ({ be, params, body: o, query }) => {
      const id = params.id;
      samePath(o, 'id', id, '');
      sameService(be, o.service_id, 'service_id');
      if (!be.rm.has('organization', gridKeys.organization(id))) throw dataErrors.organizationNotFound({ id });
      const signer = be.signers.pick(query.signer);
      return submitActions(be, signer, [{ action: { ...o, id, action: 'update_organization' }, path: '' }], query.wait);
    },
  });
}
