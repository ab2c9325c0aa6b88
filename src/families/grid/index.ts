/**
 * The supply-chain transaction families (Pike identities, schemas, products, locations,
 * purchase orders), each usable as a plain family and through the `sabre` family that
 * upstream clients wrap them in. Register `gridFamilies` with the engine; the read model
 * of their records (src/ledger/read-model) is written by the committer and read by the data API.
 */
import type { Family } from '../types.js';
import { locationFamily } from './location.js';
import { pikeFamily } from './pike.js';
import { productFamily } from './product.js';
import { purchaseOrderFamily } from './purchase-order.js';
import { sabreFamily } from './sabre.js';
import { schemaFamily } from './schema.js';

export const gridFamilies: Family[] = [pikeFamily, schemaFamily, productFamily, locationFamily, purchaseOrderFamily, sabreFamily];

export { locationFamily, pikeFamily, productFamily, purchaseOrderFamily, sabreFamily, schemaFamily };
export { createSabreFamily, GRID_CONTRACTS, type SabreContract, type SabreFallback } from './sabre.js';
export {
  buildGridTransaction,
  wrapInSabre,
  GridBuildError,
  GRID_ACTIONS,
  type BuiltTransaction,
  type BuildOptions,
  type GridActionInput,
} from './build.js';
