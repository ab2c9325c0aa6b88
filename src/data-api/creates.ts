/**
 * The shared shell of every create operation: `{data: [records]}`, each record checked
 * against the resource's shape, its path parameters and `service_id`, its id unique
 * within the request and not taken yet; then all records go into ONE batch signed by the
 * chosen key. Each resource supplies only what differs: the id check and the action.
 */
import type { Answer } from '../http/route.js';
import type { GridActionInput } from '../families/grid/index.js';
import type { DataBackend } from './backend.js';
import { sameService } from './records.js';
import { submitActions, type WriteQuery } from './submit.js';
import { at, bad, checkId, checkShape, samePath, uniqueIn, type Obj, type Shape } from './validate.js';

export interface CreateSpec {
  shape: Shape;
  /** Body field that identifies a record. */
  idField: string;
  /** Path parameters the body must agree with (e.g. `{org_id: 'acme'}`). */
  pathFields?: Record<string, string>;
  /** Why the id itself is not acceptable (format, check digit), or undefined. */
  invalidId?(id: string): string | undefined;
  /** Why a record with this id cannot be created (already exists), or undefined. */
  taken(id: string): string | undefined;
  /** The family action for one checked record. */
  action(o: Obj, id: string, path: string): GridActionInput;
}

/** `items`: the request's `data` list, as the route's body parser (dataItems) read it. */
export function submitCreates(be: DataBackend, query: WriteQuery, items: unknown[], spec: CreateSpec): Promise<Answer> {
  const signer = be.signers.pick(query.signer);
  const seen = new Set<string>();
  const planned = items.map((item, i) => {
    const path = `data[${i}]`;
    const o = checkShape(item, spec.shape, path);
    for (const [key, value] of Object.entries(spec.pathFields ?? {})) samePath(o, key, value, path);
    sameService(be, o.service_id, at(path, 'service_id'));
    const id = o[spec.idField] as string;
    const idPath = `${path}.${spec.idField}`;
    checkId(id, idPath);
    const invalid = spec.invalidId?.(id);
    if (invalid !== undefined) throw bad(`\`${idPath}\`: ${invalid}`);
    uniqueIn(seen, id, idPath);
    const taken = spec.taken(id);
    if (taken !== undefined) throw bad(`\`${idPath}\`: ${taken}`);
    return { action: spec.action(o, id, path), path };
  });
  return submitActions(be, signer, planned, query.wait);
}
