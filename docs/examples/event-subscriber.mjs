// An event subscriber for Cairn's component endpoint (or a Sawtooth validator): subscribes to
// block commits and to the state changes under an address prefix, resuming after a known
// block, and prints one line per event. Messages are encoded with the sawtooth-sdk package's
// protobufs; the socket is zeromq 6.
//
//   node docs/examples/event-subscriber.mjs tcp://127.0.0.1:4004 [prefix] [last-known-block-id] [blocks-then-exit]
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { Dealer } from 'zeromq';

const require = createRequire(import.meta.url);
const pb = require('sawtooth-sdk/protobuf');
const MT = pb.Message.MessageType;
const [endpoint = 'tcp://127.0.0.1:4004', prefix = '1cf126', lastKnown = '', stopAfter = '0'] = process.argv.slice(2);

const sock = new Dealer();
sock.connect(endpoint);
const subscribe = pb.ClientEventsSubscribeRequest.encode({
  subscriptions: [
    { eventType: 'sawtooth/block-commit' },
    {
      eventType: 'sawtooth/state-delta',
      filters: [{ key: 'address', matchString: `^${prefix}`, filterType: pb.EventFilter.FilterType.REGEX_ANY }],
    },
  ],
  // Events of the blocks after this one come first (catch-up); empty: from now on.
  lastKnownBlockIds: lastKnown ? [lastKnown] : [],
}).finish();
await sock.send(
  pb.Message.encode({ messageType: MT.CLIENT_EVENTS_SUBSCRIBE_REQUEST, correlationId: randomBytes(16).toString('hex'), content: subscribe }).finish(),
);

let blocks = 0;
for await (const [frame] of sock) {
  const msg = pb.Message.decode(frame);
  if (msg.messageType === MT.CLIENT_EVENTS_SUBSCRIBE_RESPONSE) {
    const r = pb.ClientEventsSubscribeResponse.decode(msg.content);
    if (r.status !== pb.ClientEventsSubscribeResponse.Status.OK) throw new Error(`subscription refused: ${r.status} ${r.responseMessage}`);
    console.log('subscribed');
  } else if (msg.messageType === MT.CLIENT_EVENTS) {
    for (const e of pb.EventList.decode(msg.content).events) {
      const attr = (k) => e.attributes.find((a) => a.key === k)?.value;
      if (e.eventType === 'sawtooth/block-commit') console.log(`block ${attr('block_num')} ${attr('block_id')}`);
      else for (const c of pb.StateChangeList.decode(e.data).stateChanges) console.log(`  ${c.type === 1 ? 'set' : 'delete'} ${c.address}`);
    }
    if (++blocks === Number(stopAfter)) break;
  }
}
sock.close();
