/**
 * What the protocol fuzzers share (test/fuzz-component.test.ts, test/fuzz-circuits.test.ts,
 * test/fuzz-cluster.test.ts): the seed, a seeded PRNG per round, byte mutations, nasty strings,
 * and a bounded loop.
 *
 * The seed comes from FUZZ_SEED (or CAIRN_FUZZ_SEED, as test/fuzz.test.ts reads it), else at
 * random; each file prints it with t.comment. Each round draws from its own PRNG, seeded from
 * the seed and the round's number, so that round k sends the same messages whatever the
 * time bound let the rounds before it send. CAIRN_FUZZ_MS sets a file's fuzzing time in all
 * (default 12 s, shared by its rounds); the number of messages a round sends is capped too.
 */

export const SEED = Number(process.env.FUZZ_SEED ?? process.env.CAIRN_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 32)) >>> 0;
/** A file's fuzzing time in all (ms): its rounds share it. The checks after each round come on top. */
export const FUZZ_MS = Number(process.env.CAIRN_FUZZ_MS ?? 12_000);

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws from one PRNG. */
export class Rng {
  readonly next: () => number;

  constructor(seed: number) {
    this.next = prng(seed);
  }

  /** The PRNG of round `round` of a run with seed `seed`. */
  static round(seed: number, round: number): Rng {
    return new Rng(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(round + 1, 0xc2b2ae35));
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(xs: readonly T[]): T {
    const x = xs[this.int(xs.length)];
    if (x === undefined) throw new Error('pick from an empty list');
    return x;
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) b[i] = this.int(256);
    return b;
  }

  hex(chars: number): string {
    let s = '';
    for (let i = 0; i < chars; i++) s += '0123456789abcdef'[this.int(16)];
    return s;
  }

  /** A string from the nasty list, or random characters of a nasty length. */
  string(): string {
    if (this.chance(0.5)) return this.pick(NASTY_STRINGS);
    const len = this.pick([1, 4, 16, 64, 70, 128, 129, 300, 4096]);
    let s = '';
    for (let i = 0; i < len; i++) s += String.fromCharCode(this.chance(0.9) ? 32 + this.int(95) : this.int(0x3000));
    return s;
  }

  /** A number a field of any integer type may be sent. */
  number(): number {
    return this.pick([0, 1, -1, 2, 7, 255, 256, 65535, 2 ** 31 - 1, -(2 ** 31), 2 ** 32 - 1, 2 ** 53 - 1, 1000, 1001, 100_000]);
  }

  /** A mutation of `valid`: bytes flipped, cut, inserted, duplicated, a huge length spliced in, or random bytes. */
  mutate(valid: Uint8Array): Buffer {
    const b = Buffer.from(valid);
    switch (this.int(8)) {
      case 0: {
        for (let i = 0, n = 1 + this.int(5); i < n && b.length > 0; i++) b[this.int(b.length)] = this.int(256);
        return b;
      }
      case 1:
        return b.subarray(0, this.int(b.length + 1));
      case 2: {
        const i = this.int(b.length + 1);
        return Buffer.concat([b.subarray(0, i), this.bytes(1 + this.int(20)), b.subarray(i)]);
      }
      case 3:
        return this.bytes(this.int(300));
      case 4: {
        // A huge declared length (a protobuf varint, or a big-endian u32) at a random place.
        const i = this.int(b.length + 1);
        const huge = this.chance(0.5) ? Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]) : Buffer.from([0xff, 0xff, 0xff, 0xf0]);
        return Buffer.concat([b.subarray(0, i), huge, b.subarray(i)]);
      }
      case 5:
        return Buffer.concat([b, b.subarray(0, this.int(b.length + 1))]);
      case 6: {
        // A byte removed.
        const i = this.int(b.length);
        return Buffer.concat([b.subarray(0, i), b.subarray(i + 1)]);
      }
      default: {
        // One bit flipped.
        if (b.length > 0) {
          const i = this.int(b.length);
          b[i] = (b[i] ?? 0) ^ (1 << this.int(8));
        }
        return b;
      }
    }
  }
}

export const NASTY_STRINGS: readonly string[] = [
  '',
  ' ',
  '0',
  '-1',
  'null',
  '__proto__',
  'constructor',
  'toString',
  '%00',
  '\u0000',
  '\ud800',
  '😀',
  '::',
  'admin::',
  'é'.repeat(300),
  'x'.repeat(1025),
  '0'.repeat(128),
  'f'.repeat(128),
  'F'.repeat(128),
  '0'.repeat(70),
  '0'.repeat(64),
  '0000000000000000',
  '1cf126',
  '../..',
  '\n',
  '9'.repeat(30),
];

/** Runs `step` until the time or the count is up; resolves with the number of steps run. */
export async function forAWhile(ms: number, max: number, step: (i: number) => Promise<void> | void): Promise<number> {
  const until = Date.now() + ms;
  let i = 0;
  for (; i < max && Date.now() < until; i++) await step(i);
  return i;
}

/** Polls `ok` until it holds; throws naming `what` after `ms`. */
export async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Resolves with `p`'s value, or rejects naming `what` after `ms` (a hang is a failure, not a stuck test). */
export function within<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]);
}
