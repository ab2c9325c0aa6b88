// Development entry of the verify pool when running from TypeScript sources: registers
// the tsx loader in this worker before importing the real entry.
import { register } from 'tsx/esm/api';

register();
const mod = await import('./verify.ts');
export default mod.default;
