import t from 'tap';
import { FrameReader, frame, lrc } from '../src/circuits/frame.js';
import { CircuitProposal, decode, encode } from '../src/proto/circuits.js';

t.test('the 7-byte header with its LRC, as upstream', async (t) => {
  t.same(frame(new Uint8Array(0)), Buffer.from([0, 1, 0, 0, 0, 0, 0xff]), 'an empty frame');
  t.equal(lrc(Buffer.from([0, 1, 0, 0, 0, 5])), 0xfa);
  const r = new FrameReader('accept', 1024);
  const both = Buffer.concat([Buffer.from([0, 1, 0, 1]), frame(Buffer.from('abc')), frame(Buffer.from('de'))]);
  // Byte by byte: frames are reassembled across reads.
  const got: Buffer[] = [];
  let negotiated: number[] | undefined;
  for (const b of both) {
    const o = r.push(Buffer.from([b]));
    negotiated ??= o.negotiated;
    got.push(...o.frames);
  }
  t.same(negotiated, [1, 1]);
  t.same(got.map(String), ['abc', 'de']);
  const big = new FrameReader('dial', 4);
  t.throws(
    () => big.push(Buffer.concat([Buffer.from([0, 1]), frame(Buffer.from('12345'))])),
    { message: /exceeds the limit of 4/ },
    'over the limit',
  );
});

t.test('canonical encoding leaves defaults out and keeps repeated order', async (t) => {
  const p = {
    proposalType: 1,
    circuitId: 'abcde-12345',
    circuitHash: '',
    votes: [
      { publicKey: Buffer.from('02', 'hex'), vote: 1, voterNodeId: 'b' },
      { publicKey: Buffer.from('03', 'hex'), vote: 1, voterNodeId: 'a' },
    ],
    requester: new Uint8Array(0),
    requesterNodeId: '',
  };
  const bytes = encode(CircuitProposal, p);
  const back = decode<{ votes: Array<{ voterNodeId: string }> }>(CircuitProposal, bytes);
  t.same(
    back.votes.map((v) => v.voterNodeId),
    ['b', 'a'],
  );
  t.same(encode(CircuitProposal, back), bytes, 're-encoding a decoded message gives the same bytes');
  t.equal(encode(CircuitProposal, { circuitId: '', proposalType: 0 }).length, 0, 'all defaults: nothing written');
});
