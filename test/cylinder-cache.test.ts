/**
 * Verified Cylinder tokens are kept by their string (every request of a client carries the
 * same one): a kept token still expires at its `exp`, and a token that differs by one
 * character is verified on its own, whatever was kept.
 */
import t from 'tap';
import { Signer, randomPrivateKey } from '../src/crypto/secp256k1.js';
import { makeCylinderJwt, verifyCylinderJwt } from '../src/auth/cylinder.js';

t.test('a kept token proves the same key, again and again', async (t) => {
  const s = new Signer(randomPrivateKey());
  const tok = makeCylinderJwt(s);
  for (let i = 0; i < 3; i++) t.equal(verifyCylinderJwt(tok), s.publicKey);
});

t.test('a kept token is refused once its exp has passed', async (t) => {
  const s = new Signer(randomPrivateKey());
  const now = Math.floor(Date.now() / 1000);
  const tok = makeCylinderJwt(s, { exp: now + 60 });
  t.equal(verifyCylinderJwt(tok, now), s.publicKey, 'valid before exp');
  t.equal(verifyCylinderJwt(tok, now + 30), s.publicKey, 'kept, still valid');
  t.equal(verifyCylinderJwt(tok, now + 61), null, 'kept, but expired');
});

t.test('a token altered after a valid one was kept is refused', async (t) => {
  const s = new Signer(randomPrivateKey());
  const other = new Signer(randomPrivateKey());
  const tok = makeCylinderJwt(s);
  t.equal(verifyCylinderJwt(tok), s.publicKey);
  const [h, c, sig] = tok.split('.') as [string, string, string];
  const flipped = `${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`;
  t.equal(verifyCylinderJwt(`${h}.${c}.${flipped}`), null, 'other signature');
  const otherClaims = makeCylinderJwt(other).split('.')[1];
  t.equal(verifyCylinderJwt(`${h}.${otherClaims}.${sig}`), null, 'other issuer with the kept signature');
});

t.test('more tokens than are kept all verify, and the first still does', async (t) => {
  const signers = Array.from({ length: 4 }, () => new Signer(randomPrivateKey()));
  const toks = Array.from({ length: 1100 }, (_, i) => {
    const s = signers[i % 4] as Signer;
    return { s, tok: makeCylinderJwt(s, { n: i }) };
  });
  let ok = 0;
  for (const { s, tok } of toks) if (verifyCylinderJwt(tok) === s.publicKey) ok++;
  t.equal(ok, toks.length);
  const first = toks[0] as (typeof toks)[number];
  t.equal(verifyCylinderJwt(first.tok), first.s.publicKey);
});
