/** CBOR as the upstream encoders write it: the intkey payload and state vectors, round trips, bad input. */
import t from 'tap';
import { decode, encode, encodeBytes } from '../src/codec/cbor.js';
import { intkeyAddress, intkeyPayload } from '../src/families/intkey.js';

t.test('upstream vectors', async (t) => {
  t.equal(intkeyPayload('set', 'foo', 42).toString('hex'), 'a3644e616d6563666f6f6556616c7565182a645665726263736574');
  t.equal(encode({ foo: 42 }).toString('hex'), 'a163666f6f182a');
  t.equal(intkeyAddress('name'), '1cf126cc488cca4cc3565a876f6040f8b73a7b92475be1d0b1bc453f6140fba7183b9a');
  t.equal(encode({ c: {}, v: null }).toString('hex'), 'a26163a06176f6');
});

t.test('round trips and heads', async (t) => {
  const values = [
    0,
    23,
    24,
    255,
    256,
    65535,
    65536,
    4294967295,
    4294967296,
    -1,
    -24,
    -25,
    -1000,
    2n ** 64n - 1n,
    -(2n ** 63n),
    'héllo',
    true,
    false,
    null,
    [1, [2, 'x']],
  ];
  for (const v of values) {
    const back = decode(encode(v));
    t.same(typeof back === 'bigint' || typeof v === 'bigint' ? String(back) : back, typeof v === 'bigint' ? String(v) : v, `value ${String(v)}`);
  }
  const bytes = Buffer.from([1, 2, 3]);
  t.same(decode(encode(bytes)), bytes);
  t.same(decode(encodeBytes(bytes)), bytes);
  const m = decode(
    encode(
      new Map<number, string>([
        [2, 'b'],
        [1, 'a'],
      ]),
    ),
  ) as Map<number, string>;
  t.same([...m.keys()], [1, 2], 'non-text keys sorted by encoding');
});

t.test('bad input throws CborError', async (t) => {
  for (const hex of ['', '18', '5a0000', 'a1', 'ff', '1c', 'f8', '9f', 'a163666f6f182a00', 'c0']) {
    t.throws(() => decode(Buffer.from(hex, 'hex')), { name: 'CborError' }, `decode ${hex}`);
  }
  t.throws(() => encode(1.5), { name: 'CborError' });
  let deep: unknown = 1;
  for (let i = 0; i < 100; i++) deep = [deep];
  t.throws(() => decode(encode(deep as never)), { name: 'CborError' }, 'nesting limit');
});
