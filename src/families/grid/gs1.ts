/**
 * GS1 identifier rules: GTIN-12/13/14 for products and GLN-13 for locations, both with
 * the GS1 mod-10 check digit (weights 3,1,3,1... from the digit left of the check digit).
 */
import { invalid } from './common.js';

const DIGITS = /^[0-9]+$/;

/** The check digit for a string of digits that excludes it. */
export function gs1CheckDigit(body: string): number {
  let sum = 0;
  for (let i = body.length - 1, w = 3; i >= 0; i--, w = w === 3 ? 1 : 3) {
    sum += (body.charCodeAt(i) - 48) * w;
  }
  return (10 - (sum % 10)) % 10;
}

/** Why a GTIN is invalid, or undefined when it is valid. */
export function gtinError(gtin: string): string | undefined {
  if (!DIGITS.test(gtin)) return `Invalid format, GTIN identifiers only contain numbers: ${gtin}`;
  if (gtin.length === 8) return `Invalid GTIN, GTIN-8 is not supported at this time: ${gtin}`;
  if (gtin.length !== 12 && gtin.length !== 13 && gtin.length !== 14) {
    return `Invalid length for GTIN identifier: ${gtin}`;
  }
  const check = gtin.charCodeAt(gtin.length - 1) - 48;
  if (gs1CheckDigit(gtin.slice(0, -1)) !== check) {
    return `Invalid gtin, check digit validation failed: ${gtin}`;
  }
  return undefined;
}

export function validateGtin(gtin: string): void {
  const err = gtinError(gtin);
  if (err !== undefined) invalid(err);
}

/** A GLN is 13 digits whose last digit is the GS1 check digit of the first 12. */
export function isValidGln(gln: string): boolean {
  if (gln.length !== 13 || !DIGITS.test(gln)) return false;
  return gs1CheckDigit(gln.slice(0, 12)) === gln.charCodeAt(12) - 48;
}

export function validateGln(gln: string): void {
  if (!isValidGln(gln)) invalid(`Invalid GLN: ${gln}`);
}
