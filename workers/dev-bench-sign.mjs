// Development entry of the bench generator's worker when running from TypeScript sources
// (see dev-verify.mjs).
try {
  await import('./bench-sign.ts');
} catch (err) {
  if (err?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import('tsx/esm/api');
  register();
  await import('./bench-sign.ts?tsx');
}
