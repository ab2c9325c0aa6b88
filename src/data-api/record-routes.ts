/**
 * The routes every Grid record resource declares the same way, declared once: the page of
 * its records, the create of a list of them (one batch), and the delete of one. A resource
 * module passes only what differs: its path, reply, read-model name, create spec and the
 * action that deletes a record.
 */
import type { GridActionInput } from '../families/grid/index.js';
import type { GridDbName } from '../ledger/read-model/reader.js';
import type { Params, ReplySchema } from '../http/route.js';
import type { DataBackend } from './backend.js';
import { submitCreates, type CreateSpec } from './creates.js';
import { listBody, parsePage } from './paging.js';
import { plainJson } from './records.js';
import { dataReplies } from './replies.js';
import { ok, type DataRouter } from './router.js';
import { submitActions, writeQuery } from './submit.js';
import { dataItems } from './validate.js';

/** GET `path`: a page of the read model's `name` records, as stored (plus `service_id`). */
export function listRoute(r: DataRouter, path: string, reply: ReplySchema, name: GridDbName): void {
  r.route({
    method: 'get',
    path,
    reply,
    query: parsePage,
    handler: ({ req, be, query: page }) => ok(listBody(req, page, be.rm.page(name, '', page.offset, page.limit), plainJson(be))),
  });
}

/** POST `path`: `{data: [records]}` created in one batch; `spec` is the resource's part (submitCreates). */
export function createRoute(r: DataRouter, path: string, spec: (be: DataBackend) => CreateSpec): void {
  r.route({
    method: 'post',
    path,
    reply: dataReplies.submitted,
    body: dataItems,
    query: writeQuery,
    handler: ({ be, body, query }) => submitCreates(be, query, body, spec(be)),
  });
}

/**
 * DELETE `path`: the record its parameters name, deleted by the action `remove` returns
 * (`remove` refuses, 404, a record that does not exist). The signer is picked after that.
 */
export function deleteRoute<Path extends string>(
  r: DataRouter,
  path: Path,
  remove: (be: DataBackend, params: Params<Path>) => GridActionInput,
): void {
  r.route({
    method: 'del',
    path,
    reply: dataReplies.submitted,
    query: writeQuery,
    handler: ({ be, params, query }) => {
      const action = remove(be, params);
      const signer = be.signers.pick(query.signer);
      return submitActions(be, signer, [{ action, path: '' }], query.wait);
    },
  });
}
