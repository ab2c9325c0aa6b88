/** Signing: upstream Sawtooth SDK vectors, low-S only, and the pure-JS fallback. */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { TS_ARGS } from './helpers/child.js';
import { Signer, verify, backend, publicKeyFromPrivate, isValidPublicKey, isValidPrivateKey, randomPrivateKey } from '../src/crypto/secp256k1.js';

const V = [
  {
    priv: '2f1e7b7a130d7ba9da0068b3bb0ba1d79e7e77110302c9f746c3c2a63fe40088',
    pub: '026a2c795a9776f75464aa3bda3534c3154a6e91b357b1181d3f515110f84b67c5',
    msg: 'test',
    sig: '5195115d9be2547b720ee74c23dd841842875db6eae1f5da8605b050a49e702b4aa83be72ab7e3cb20f17c657011b49f4c8632be2745ba4de79e6aa05da57b35',
  },
  {
    priv: '51b845c2cdde22fe646148f0b51eaf5feec8c82ee921d5e0cbe7619f3bb9c62d',
    pub: '039c20a66b4ec7995391dbec1d8bb0e2c6e6fd63cd259ed5b877cb4ea98858cf6d',
    msg: 'test2',
    sig: 'd589c7b1fa5f8a4c5a389de80ae9582c2f7f2a5e21bab5450b670214e5b1c1235e9eb8102fd0ca690a8b42e2c406a682bd57f6daf6e142e5fa4b2c26ef40a490',
  },
];
const N = BigInt('0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141');
const highS = (sig: string): string => sig.slice(0, 64) + (N - BigInt(`0x${sig.slice(64)}`)).toString(16).padStart(64, '0');

t.test('upstream vectors with the native backend', async (t) => {
  t.equal(backend, 'native', 'libsecp256k1 loads on this machine');
  for (const v of V) {
    const s = new Signer(v.priv);
    t.equal(s.publicKey, v.pub);
    t.equal(publicKeyFromPrivate(v.priv), v.pub);
    t.equal(s.sign(v.msg), v.sig, 'deterministic RFC 6979 low-S signature');
    t.ok(verify(v.sig, Buffer.from(v.msg), v.pub));
    t.notOk(verify(v.sig, Buffer.from(`${v.msg}!`), v.pub), 'other message');
    t.notOk(verify(highS(v.sig), Buffer.from(v.msg), v.pub), 'high-S form is rejected');
  }
  t.notOk(verify(V[0]!.sig, Buffer.from(V[0]!.msg), V[1]!.pub), 'wrong key');
  t.notOk(verify('zz', Buffer.from('x'), V[0]!.pub), 'malformed signature');
  t.notOk(verify(V[0]!.sig, Buffer.from('test'), `04${'a'.repeat(64)}`), 'malformed key');
  t.notOk(verify('f'.repeat(128), Buffer.from('test'), V[0]!.pub), 'out-of-range signature');
  t.ok(isValidPublicKey(V[0]!.pub));
  t.notOk(isValidPublicKey(`02${'0'.repeat(64)}`));
  t.ok(isValidPrivateKey(randomPrivateKey()));
  t.notOk(isValidPrivateKey('0'.repeat(64)));
  t.throws(() => new Signer('0'.repeat(64)));
  t.same(JSON.parse(JSON.stringify(new Signer(V[0]!.priv))), { publicKey: V[0]!.pub }, 'JSON never shows the private key');
});

t.test('the @noble fallback gives the same answers', async (t) => {
  const script = `
    import { Signer, verify, backend } from './src/crypto/secp256k1.ts';
    const V = ${JSON.stringify(V)};
    const hs = ${JSON.stringify(V.map((v) => highS(v.sig)))};
    const out = { backend, results: V.map((v, i) => [new Signer(v.priv).publicKey, new Signer(v.priv).sign(v.msg), verify(v.sig, Buffer.from(v.msg), v.pub), verify(hs[i], Buffer.from(v.msg), v.pub)]) };
    process.stdout.write(JSON.stringify(out));
  `;
  const out = execFileSync(process.execPath, [...TS_ARGS, '--input-type=module', '-e', script], {
    env: { ...process.env, CAIRN_FORCE_NOBLE: '1' },
    encoding: 'utf8',
  });
  const parsed = JSON.parse(out) as { backend: string; results: Array<[string, string, boolean, boolean]> };
  t.equal(parsed.backend, 'noble');
  for (const [i, v] of V.entries()) t.same(parsed.results[i], [v.pub, v.sig, true, false]);
});

t.test('keys kept in uncompressed form: the same answers on every call, bad keys refused', async (t) => {
  const [a, b] = V as [(typeof V)[0], (typeof V)[0]];
  for (let i = 0; i < 3; i++) {
    t.ok(verify(a.sig, Buffer.from(a.msg), a.pub), `right key, call ${i}`);
    t.notOk(verify(a.sig, Buffer.from(a.msg), b.pub), `other signer's key, call ${i}`);
    t.notOk(verify(b.sig, Buffer.from(a.msg), b.pub), `other message, call ${i}`);
  }
  // Well-formed hex, but no point on the curve has this x (beyond the field prime).
  const offCurve = `02${'f'.repeat(64)}`;
  for (let i = 0; i < 2; i++) t.notOk(verify(a.sig, Buffer.from(a.msg), offCurve), `a key off the curve, call ${i}`);
  // Same x, other parity: the other point, which did not sign.
  const flipped = (a.pub.startsWith('02') ? '03' : '02') + a.pub.slice(2);
  t.notOk(verify(a.sig, Buffer.from(a.msg), flipped), 'the negated key');
  t.ok(verify(a.sig, Buffer.from(a.msg), a.pub), 'the right key still verifies after those');
});
