/**
 * The benchmark scripts' settings from the environment, checked: a value that is not a whole
 * number within the setting's range stops the script with one line naming it and exit 2,
 * instead of a run with a bogus figure (CONNECTIONS=0 once reported 39,250 batches/s).
 */
export function envInt(name: string, dflt: number, min: number, max = 100_000_000): number {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = /^\d+$/.test(v.trim()) ? Number(v.trim()) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    process.stderr.write(`${process.argv[1]?.split('/').pop() ?? 'bench'}: ${name} must be a whole number from ${min} to ${max}, got "${v}"\n`);
    process.exit(2);
  }
  return n;
}
