import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bcs } from '@mysten/sui/bcs';
import { ChainInputError } from '../chain-input-error.ts';
import { checkSuiTransactionLimits, SUI_TRANSACTION_LIMITS as L } from './check-sui-transaction-limits.ts';
import { prepareSuiTransaction } from './prepare-sui-transaction.ts';

const ADDRESS = `0x${'33'.repeat(32)}`;
const DIGEST = '4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi';
const objectRef = (n: number) => ({
  objectId: `0x${n.toString(16).padStart(64, '0')}`,
  version: String(n),
  digest: DIGEST,
});

/** TransactionData V1 through the SDK's own BCS schema. */
function transactionData(
  inputs: unknown[],
  commands: unknown[],
  extra: { payment?: unknown[]; expiration?: unknown; kind?: unknown } = {},
): Uint8Array {
  return bcs.TransactionData.serialize({
    V1: {
      kind: extra.kind ?? { ProgrammableTransaction: { inputs, commands } },
      sender: ADDRESS,
      gasData: { payment: extra.payment ?? [objectRef(1)], owner: ADDRESS, price: '1000', budget: '5000000' },
      expiration: extra.expiration ?? { None: true },
    },
  } as never).toBytes();
}

/** A type tag string nested `depth` levels: vector<vector<…u8…>>. */
const nestedVector = (depth: number) => `${'vector<'.repeat(depth - 1)}u8${'>'.repeat(depth - 1)}`;
const moveCall = (typeArguments: string[], args: unknown[] = [], names = { module: 'm', function: 'f' }) => ({
  MoveCall: { package: ADDRESS, ...names, typeArguments, arguments: args },
});

function refused(bytes: Uint8Array, message: RegExp): void {
  assert.throws(
    () => checkSuiTransactionLimits(bytes),
    (error: unknown) => {
      assert.ok(error instanceof ChainInputError, String(error));
      assert.equal(error.field, 'transaction');
      assert.match(error.message, message);
      return true;
    },
  );
}

/** Every variant the SDK's schema has: each CallArg, ObjectArg, Command, Argument and TypeTag kind. */
const EVERY_VARIANT = transactionData(
  [
    { Pure: { bytes: new Uint8Array([1, 2, 3]) } },
    { Object: { ImmOrOwnedObject: objectRef(2) } },
    { Object: { SharedObject: { objectId: ADDRESS, initialSharedVersion: '7', mutable: true } } },
    { Object: { Receiving: objectRef(3) } },
  ],
  [
    moveCall(
      [
        'bool',
        'u8',
        'u16',
        'u32',
        'u64',
        'u128',
        'u256',
        'address',
        'signer',
        nestedVector(L.typeDepth),
        `${ADDRESS}::coin::Coin<${ADDRESS}::sui::SUI>`,
      ],
      [{ GasCoin: true }, { Input: 0 }, { Result: 0 }, { NestedResult: [0, 1] }],
    ),
    { TransferObjects: { objects: [{ Result: 0 }], address: { Input: 0 } } },
    { SplitCoins: { coin: { GasCoin: true }, amounts: [{ Input: 0 }] } },
    { MergeCoins: { destination: { GasCoin: true }, sources: [{ Result: 2 }] } },
    { Publish: { modules: [new Uint8Array(40)], dependencies: [ADDRESS] } },
    { MakeMoveVec: { type: 'u64', elements: [{ Input: 0 }] } },
    { MakeMoveVec: { type: null, elements: [{ Input: 1 }] } },
    { Upgrade: { modules: [new Uint8Array(8)], dependencies: [ADDRESS], package: ADDRESS, ticket: { Result: 0 } } },
  ],
  { expiration: { Epoch: 12 } },
);

describe('checkSuiTransactionLimits', () => {
  it('reads every variant of the SDK schema to its last byte, and what prepareSuiTransaction accepts', () => {
    checkSuiTransactionLimits(EVERY_VARIANT);
    prepareSuiTransaction(Buffer.from(EVERY_VARIANT).toString('base64'));
    // Every shorter prefix ends inside something: the walk covers the whole transaction, no byte left unread.
    for (let length = 0; length < EVERY_VARIANT.length; length++) {
      refused(EVERY_VARIANT.subarray(0, length), /is not valid BCS TransactionData/);
    }
    for (const kind of [{ ChangeEpoch: true }, { Genesis: true }, { ConsensusCommitPrologue: true }]) {
      checkSuiTransactionLimits(transactionData([], [], { kind }));
    }
  });

  it('refuses unknown variants', () => {
    const bytes = Uint8Array.from(EVERY_VARIANT);
    bytes[1] = 9; // TransactionKind
    refused(bytes, /unknown TransactionKind variant 9/);
  });

  it("caps type arguments: their number, depth, width and size (the SDK's decoder is quadratic in depth)", () => {
    refused(
      transactionData([], [moveCall([nestedVector(L.typeDepth + 1)])]),
      /command 0 \(MoveCall\) has a type argument nested more than 16 levels deep/,
    );
    refused(
      transactionData([], [{ MakeMoveVec: { type: nestedVector(L.typeDepth + 1), elements: [] } }]),
      /command 0 \(MakeMoveVec\) has a type argument nested more than 16/,
    );
    refused(
      transactionData([], [moveCall(Array(L.typeArguments + 1).fill('u8'))]),
      /command 0 \(MoveCall\) has 17 type arguments; at most 16 are accepted/,
    );
    const wide = (n: number) => `${ADDRESS}::m::S<${Array(n).fill('u8').join(',')}>`;
    checkSuiTransactionLimits(transactionData([], [moveCall([wide(L.typeParameters)])]));
    refused(transactionData([], [moveCall([wide(L.typeParameters + 1)])]), /has 33 type parameters/);
    // 8 levels of structs of 32 parameters: each level within the caps, the whole past 256 tags.
    let big = 'u8';
    for (let level = 0; level < 2; level++) big = `${ADDRESS}::m::S<${Array(L.typeParameters).fill(big).join(',')}>`;
    refused(transactionData([], [moveCall([big])]), /type argument of more than 256 type tags/);
    // 16 calls of 16 type arguments of 16 tags each: 4096 tags, accepted; twice as many calls pass 8192 in all.
    const call = moveCall(Array(L.typeArguments).fill(nestedVector(L.typeDepth)));
    checkSuiTransactionLimits(transactionData([], Array(32).fill(call)));
    refused(transactionData([], Array(33).fill(call)), /type arguments have more than 8192 type tags in all/);
  });

  it('caps inputs, pure bytes, commands, arguments, names, modules and gas payment, naming the part', () => {
    const pure = (n: number) => ({ Pure: { bytes: new Uint8Array(n) } });
    refused(transactionData(Array(L.inputs + 1).fill(pure(0)), []), /^transaction has 2049 inputs; at most 2048/);
    refused(transactionData([pure(L.pureBytes + 1)], []), /input 0 \(pure\) is 16385 bytes; at most 16384/);
    checkSuiTransactionLimits(transactionData([pure(L.pureBytes)], []));
    const split = { SplitCoins: { coin: { GasCoin: true }, amounts: [{ Input: 0 }] } };
    refused(transactionData([], Array(L.commands + 1).fill(split)), /transaction has 1025 commands/);
    refused(
      transactionData([], [{ MergeCoins: { destination: { GasCoin: true }, sources: Array(513).fill({ Input: 0 }) } }]),
      /command 0 \(MergeCoins\) has 513 arguments; at most 512/,
    );
    const transfer = {
      TransferObjects: { objects: Array(L.argumentsPerCommand).fill({ GasCoin: true }), address: { Input: 0 } },
    };
    refused(transactionData([], Array(17).fill(transfer)), /more than 8192 arguments in all/);
    refused(
      transactionData([], [moveCall([], [], { module: 'm'.repeat(129), function: 'f' })]),
      /command 0 \(MoveCall\) module name is 129 bytes; at most 128/,
    );
    refused(
      transactionData([], [{ Publish: { modules: Array(L.modules + 1).fill(new Uint8Array(1)), dependencies: [] } }]),
      /command 0 \(Publish\) has 129 modules/,
    );
    refused(
      transactionData([], [], { payment: Array(L.gasPayment + 1).fill(objectRef(1)) }),
      /gas data has 257 payment objects/,
    );
  });

  it('refuses the slow body of the audit (type tags nested 4000 deep) through prepareSuiTransaction', () => {
    const tail = transactionData([], []).subarray(4);
    // V1, ProgrammableTransaction, no inputs, one command MakeMoveVec(Some(vector<…bool…>), no elements).
    const deep = Uint8Array.from([0, 0, 0, 1, 5, 1, ...Array(4000).fill(6), 0, 0, ...tail]);
    assert.throws(() => prepareSuiTransaction(Buffer.from(deep).toString('base64')), {
      field: 'transaction',
      message: /command 0 \(MakeMoveVec\) has a type argument nested more than 16 levels deep/,
    });
  });
});
