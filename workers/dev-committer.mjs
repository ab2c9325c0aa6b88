// Development entry of the committer thread when running from TypeScript sources (see
// dev-verify.mjs).
try {
  await import('./committer.ts');
} catch (err) {
  if (err?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import('tsx/esm/api');
  register();
  await import('./committer.ts?tsx');
}
