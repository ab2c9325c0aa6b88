/**
 * The code names .proto enum values and decodes messages through src/proto: every named
 * value is the one the .proto gives that name, a name the .proto lacks fails at load, and
 * decode() returns the message's fields or throws on bytes that are not one.
 */
import t from 'tap';
import type protobuf from 'protobufjs';
import { Batch, SettingsAction, SettingVoteValue, StateChangeType, decode, encode, loadProto, protoEnum } from '../src/proto/index.js';
import {
  DATA_TYPE_NAMES,
  DataType,
  G,
  LocationAction,
  LocationNamespace,
  PikeAction,
  ProductAction,
  ProductNamespace,
  PurchaseOrderAction,
  SabreAction,
  SchemaAction,
  decodeMsg,
} from '../src/families/grid/common.js';
import { InvalidTransaction } from '../src/families/types.js';

const ledger = loadProto('ledger.proto');
const grid = loadProto('grid.proto');

t.test('named values are the .proto values', async (t) => {
  const cases: Array<[string, protobuf.Root, Readonly<Record<string, number>>]> = [
    ['cairn.StateChange.Type', ledger, StateChangeType],
    ['cairn.SettingsPayload.Action', ledger, SettingsAction],
    ['cairn.SettingVote.Vote', ledger, SettingVoteValue],
    ['cairn.grid.PropertyDefinition.DataType', grid, DataType],
    ['cairn.grid.Product.ProductNamespace', grid, ProductNamespace],
    ['cairn.grid.LocationNamespace', grid, LocationNamespace],
    ['cairn.grid.PikePayload.Action', grid, PikeAction],
    ['cairn.grid.SchemaPayload.Action', grid, SchemaAction],
    ['cairn.grid.ProductPayload.Action', grid, ProductAction],
    ['cairn.grid.LocationPayload.Action', grid, LocationAction],
    ['cairn.grid.PurchaseOrderPayload.Action', grid, PurchaseOrderAction],
    ['cairn.grid.SabrePayload.Action', grid, SabreAction],
  ];
  for (const [name, root, values] of cases) {
    const byId = root.lookupEnum(name).valuesById;
    for (const [key, value] of Object.entries(values)) t.equal(byId[value], key, `${name}.${key}`);
  }
  // The wire numbers other implementations send.
  t.equal(PikeAction.CREATE_ORGANIZATION, 3);
  t.equal(SabreAction.EXECUTE_CONTRACT, 3);
  t.equal(PurchaseOrderAction.UPDATE_VERSION, 4);
  t.equal(StateChangeType.DELETE, 2);
  t.same(
    DATA_TYPE_NAMES.map((n) => DataType[n]),
    [0, 1, 2, 3, 4, 5, 6, 7],
  );
});

t.test('a name the .proto lacks fails at load', async (t) => {
  t.throws(() => protoEnum(ledger, 'cairn.SettingVote.Vote', ['ACCEPT', 'MAYBE']), /has no value MAYBE/);
  t.throws(() => protoEnum(ledger, 'cairn.NoSuchEnum', ['X']));
  t.ok(Object.isFrozen(SettingVoteValue));
});

t.test('decode returns the fields, and refuses bytes that are not the message', async (t) => {
  const bytes = encode(Batch, { headerSignature: 'ab'.repeat(64), trace: true });
  const b = decode(Batch, bytes);
  t.equal(b.headerSignature, 'ab'.repeat(64));
  t.equal(b.trace, true);
  t.same(b.transactions, []);
  // A length-delimited field 1 whose length runs past the end.
  const bad = Uint8Array.from([0x0a, 0x20, 0x01]);
  t.throws(() => decode(Batch, bad));
  t.throws(() => decodeMsg(G.AgentList, bad, 'agent list'), InvalidTransaction);
  t.throws(() => decodeMsg(G.AgentList, bad, 'agent list'), /Cannot decode agent list/);
});
