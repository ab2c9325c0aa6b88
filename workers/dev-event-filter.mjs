// Development entry of the event filter thread when running from TypeScript sources (see
// dev-verify.mjs).
try {
  await import('./event-filter.ts');
} catch (err) {
  if (err?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import('tsx/esm/api');
  register();
  await import('./event-filter.ts?tsx');
}
