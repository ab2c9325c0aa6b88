// Development entry of the verify pool when running from TypeScript sources. When the
// parent's TypeScript loader already applies in this worker (the test runner's), use it;
// otherwise register tsx here before importing the real entry.
let mod;
try {
  mod = await import('./verify.ts');
} catch (err) {
  if (err?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import('tsx/esm/api');
  register();
  mod = await import('./verify.ts?tsx');
}
export default mod.default;
