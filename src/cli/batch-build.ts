/**
 * `cairn batch build`: writes a signed BatchList file for `cairn batch submit` (or any
 * Sawtooth client: it is what POST /batches takes), offline.
 *
 *   intkey VERB NAME VALUE [VERB NAME VALUE …]   one intkey transaction per triple
 *   raw --family F --version V --input A… --output A… --payload HEX… | --payload-file FILE…
 *                                                 one transaction per payload, as given
 *
 * --per-batch N puts N transactions in each batch (default 1: one batch per transaction, so
 * a file holds many batches); --repeat N writes the transactions N times (each with its own
 * nonce). Signed by --key FILE (default <data dir>/keys/client.priv, created when missing).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildBatch, buildBatchList, buildTransaction, type BuiltBatch, type TxnSpec } from '../ledger/build.js';
import { intkeyAddress, intkeyPayload } from '../families/intkey.js';
import { checkWritable, CliError, fsReason, keyFileOrNew, readInput, UsageError, type Args, type Output } from './args.js';

const MAX_TXNS = 100_000;

function count(v: string | undefined, name: string, dflt: number, max: number): number {
  if (v === undefined) return dflt;
  if (!/^[1-9]\d*$/.test(v) || Number(v) > max) throw new UsageError(`--${name} takes a whole number from 1 to ${max}, got "${v}"`);
  return Number(v);
}

/** Intkey transactions from VERB NAME VALUE triples. */
function intkeySpecs(words: string[]): TxnSpec[] {
  if (words.length === 0 || words.length % 3 !== 0) throw new UsageError('build intkey takes VERB NAME VALUE triples (e.g. set foo 42 inc foo 1)');
  const out: TxnSpec[] = [];
  for (let i = 0; i < words.length; i += 3) {
    const [verb = '', name = '', value = ''] = words.slice(i, i + 3);
    if (!['set', 'inc', 'dec'].includes(verb)) throw new UsageError(`build intkey: unknown verb ${verb} (set, inc, dec)`);
    if (name.length > 20) throw new UsageError(`name "${name}" has ${name.length} characters; intkey takes at most 20`);
    if (!/^\d+$/.test(value) || Number(value) > 2 ** 32 - 1)
      throw new UsageError(`${verb} ${name}: the value must be a whole number from 0 to 4294967295, got "${value}"`);
    const address = intkeyAddress(name);
    out.push({
      familyName: 'intkey',
      familyVersion: '1.0',
      inputs: [address],
      outputs: [address],
      payload: intkeyPayload(verb, name, Number(value)),
    });
  }
  return out;
}

const ADDRESS = /^[0-9a-f]{6,70}$/;

/** Raw transactions: one per --payload (hex) or --payload-file, all with the same header fields. */
function rawSpecs(args: Args): TxnSpec[] {
  const need = (k: string): string => {
    const v = args.options.get(k);
    if (v === undefined) throw new UsageError(`build raw needs --${k}`);
    return v;
  };
  const familyName = need('family');
  const familyVersion = need('version');
  const addresses = (k: string): string[] => {
    const list = (args.lists.get(k) ?? []).flatMap((v) => v.split(',')).filter(Boolean);
    const bad = list.find((a) => !ADDRESS.test(a) || a.length % 2 !== 0);
    if (bad) throw new UsageError(`--${k}: not an address or prefix (an even number of 6 to 70 lowercase hex digits): ${bad}`);
    return list;
  };
  const inputs = addresses('input');
  const outputs = addresses('output');
  const payloads: Uint8Array[] = [];
  for (const hex of args.lists.get('payload') ?? []) {
    if (!/^([0-9a-fA-F]{2})*$/.test(hex)) throw new UsageError(`--payload takes hex bytes, got "${hex.length > 40 ? `${hex.slice(0, 40)}…` : hex}"`);
    payloads.push(Buffer.from(hex, 'hex'));
  }
  for (const file of args.lists.get('payload-file') ?? []) payloads.push(readInput(file, '--payload-file'));
  if (payloads.length === 0) throw new UsageError('build raw needs at least one --payload HEX or --payload-file FILE');
  return payloads.map((payload) => ({ familyName, familyVersion, inputs, outputs, payload }));
}

export function build(args: Args, output: Output, kind: string | undefined, words: string[]): number {
  const out = args.options.get('out');
  if (!out) throw new UsageError('build needs --out FILE (the BatchList file to write)');
  checkWritable(out, '--out');
  let specs: TxnSpec[];
  if (kind === 'intkey') specs = intkeySpecs(words);
  else if (kind === 'raw') {
    if (words.length > 0) throw new UsageError(`unexpected argument ${words[0]}`);
    specs = rawSpecs(args);
  } else throw new UsageError(kind ? `build: unknown kind ${kind} (intkey, raw)` : 'build needs a kind: intkey or raw');
  const perBatch = count(args.options.get('per-batch'), 'per-batch', 1, 1000);
  const repeat = count(args.options.get('repeat'), 'repeat', 1, MAX_TXNS);
  if (specs.length * repeat > MAX_TXNS) throw new UsageError(`at most ${MAX_TXNS} transactions per file, asked for ${specs.length * repeat}`);
  const dataDir = args.options.get('data-dir') ?? (process.env.CAIRN_DATA_DIR || './data');
  const keyOpt = args.options.get('key');
  const signer = keyOpt ? keyFileOrNew(keyOpt, '--key') : keyFileOrNew(join(dataDir, 'keys', 'client.priv'), '--data-dir (its keys/client.priv)');
  const batches: BuiltBatch[] = [];
  let txns = [];
  for (let r = 0; r < repeat; r++) {
    for (const spec of specs) {
      txns.push(buildTransaction(signer, spec));
      if (txns.length === perBatch) {
        batches.push(buildBatch(signer, txns));
        txns = [];
      }
    }
  }
  if (txns.length > 0) batches.push(buildBatch(signer, txns));
  try {
    writeFileSync(out, buildBatchList(batches));
  } catch (err) {
    throw new CliError(`--out: cannot write ${out}: ${fsReason(err)}`);
  }
  const total = specs.length * repeat;
  output.result(
    { file: out, signer: signer.publicKey, transactions: total, batches: batches.map((b) => b.id) },
    `wrote ${out}: ${batches.length} batch${batches.length === 1 ? '' : 'es'}, ${total} transaction${total === 1 ? '' : 's'}, signed by ${signer.publicKey}`,
  );
  return 0;
}
