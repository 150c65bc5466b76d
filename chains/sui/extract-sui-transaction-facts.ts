import { bcs } from '@mysten/sui/bcs';
import { normalizeSuiAddress } from '@mysten/sui/utils';
import { type ChainFacts, NATIVE_ASSET } from '../domain/policies.ts';

/** Sui transactions name no network the service could check: their selector is `sui`. */
const NETWORK = 'sui';

type Argument = { $kind: string; Input?: number; Result?: number; NestedResult?: [number, number] };

function pureBytes(input: unknown): Uint8Array | null {
  const pure = (input as { Pure?: { bytes?: unknown } } | undefined)?.Pure;
  return typeof pure?.bytes === 'string' ? Buffer.from(pure.bytes, 'base64') : null;
}

/**
 * The policy facts of Sui TransactionData the wallet at `walletAddress` signs (the BCS bytes `prepareSuiTransaction`
 * checked): `network` `sui`, and, for exactly a payment of SUI (`SplitCoins(GasCoin, [amount])` then
 * `TransferObjects([that coin], recipient)`, with the wallet as sender and gas owner and nothing else), `to`,
 * `value` (MIST) and `asset` `native`. Anything else (other commands, a sponsor's gas coin, bytes that do not
 * decode) leaves the spend unknown and no payment facts. Gas is never counted.
 */
export function extractSuiTransactionFacts(bytes: Uint8Array, walletAddress: string): ChainFacts {
  const unknown: ChainFacts = { network: NETWORK, facts: {}, spend: { moved: [], complete: false } };
  try {
    const data = bcs.TransactionData.parse(bytes);
    const v1 = data.V1;
    const programmable = v1?.kind.ProgrammableTransaction;
    if (!v1 || !programmable) return unknown;
    const wallet = normalizeSuiAddress(walletAddress);
    if (normalizeSuiAddress(v1.sender) !== wallet || normalizeSuiAddress(v1.gasData.owner) !== wallet) return unknown;
    const { inputs, commands } = programmable;
    if (inputs.length !== 2 || commands.length !== 2) return unknown;
    const split = commands[0]!.SplitCoins;
    const transfer = commands[1]!.TransferObjects;
    if (!split || !transfer || split.coin.$kind !== 'GasCoin' || split.amounts.length !== 1) return unknown;
    const amountArg = split.amounts[0] as Argument;
    const objects = transfer.objects as Argument[];
    const recipientArg = transfer.address as Argument;
    const coin = objects[0];
    const isSplitCoin =
      objects.length === 1 &&
      ((coin?.$kind === 'NestedResult' && coin.NestedResult?.[0] === 0 && coin.NestedResult[1] === 0) ||
        (coin?.$kind === 'Result' && coin.Result === 0));
    if (!isSplitCoin || amountArg.$kind !== 'Input' || recipientArg.$kind !== 'Input') return unknown;
    if (amountArg.Input === recipientArg.Input) return unknown;
    const amount = pureBytes(inputs[amountArg.Input!]);
    const recipient = pureBytes(inputs[recipientArg.Input!]);
    if (amount?.length !== 8 || recipient?.length !== 32) return unknown;
    const value = Buffer.from(amount).readBigUInt64LE(0).toString();
    return {
      network: NETWORK,
      facts: { to: `0x${Buffer.from(recipient).toString('hex')}`, value, asset: NATIVE_ASSET },
      spend: { moved: [{ asset: NATIVE_ASSET, amount: value }], complete: true },
    };
  } catch {
    return unknown;
  }
}
