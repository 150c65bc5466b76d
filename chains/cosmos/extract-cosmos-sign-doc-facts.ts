import { type StdSignDoc, serializeSignDoc } from '@cosmjs/amino';
import { fromBech32 } from '@cosmjs/encoding';
import { type ChainFacts, NETWORK_SELECTORS, NO_CHAIN_FACTS, SPEND_ASSETS } from '../domain/policies.ts';
import { isPlainObject } from '../is-plain-object.ts';

const SIGN_DOC_FIELDS = ['account_number', 'chain_id', 'fee', 'memo', 'msgs', 'sequence', 'timeout_height'];
const REQUIRED_FIELDS = ['account_number', 'chain_id', 'fee', 'memo', 'msgs', 'sequence'];
const AMOUNT = /^[0-9]{1,78}$/;
const DENOM = SPEND_ASSETS.COSMOS.pattern!;
/** Longest Bech32 string read (cosmjs's default, no limit, is refused by the Bech32 library it uses). */
const BECH32_LIMIT = 256;

function sameAccount(a: string, b: string): boolean {
  try {
    return Buffer.compare(fromBech32(a, BECH32_LIMIT).data, fromBech32(b, BECH32_LIMIT).data) === 0;
  } catch {
    return false;
  }
}

/** A `cosmos-sdk/MsgSend` from `wallet`: its recipient and coins; null for any other message. */
function readMsgSend(
  msg: unknown,
  wallet: string,
): { to: string; coins: Array<{ denom: string; amount: bigint }> } | null {
  if (!isPlainObject(msg) || msg['type'] !== 'cosmos-sdk/MsgSend' || !isPlainObject(msg['value'])) return null;
  const { from_address: from, to_address: to, amount } = msg['value'];
  if (typeof from !== 'string' || typeof to !== 'string' || !Array.isArray(amount)) return null;
  if (!sameAccount(from, wallet)) return null;
  const coins: Array<{ denom: string; amount: bigint }> = [];
  for (const coin of amount) {
    if (!isPlainObject(coin) || typeof coin['denom'] !== 'string' || typeof coin['amount'] !== 'string') return null;
    if (!DENOM.test(coin['denom']) || !AMOUNT.test(coin['amount'])) return null;
    coins.push({ denom: coin['denom'], amount: BigInt(coin['amount']) });
  }
  return { to, coins };
}

/**
 * The policy facts of a COSMOS `sign-message` whose text is an Amino JSON sign document (what the wallet then signs,
 * the SHA-256 of those bytes, is that document's signature). Only a document in its canonical serialization (sorted
 * keys, Amino escaping, as `serializeSignDoc` writes it) is read, so the facts describe exactly the bytes signed:
 * `network` `cosmos:<chain_id>`, and when every message is a `cosmos-sdk/MsgSend` from the wallet (the same account
 * under any Bech32 prefix), the amounts per denom, with `to`, `value` and `asset` (the denom) for exactly one message
 * of one coin. Other text, other messages, or a send from another account: no payment facts, spend unknown. Fees are
 * never counted.
 */
export function extractCosmosSignDocFacts(message: string, walletAddress: string): ChainFacts {
  let doc: unknown;
  try {
    doc = JSON.parse(message);
  } catch {
    return NO_CHAIN_FACTS;
  }
  if (!isPlainObject(doc)) return NO_CHAIN_FACTS;
  const keys = Object.keys(doc);
  if (keys.some((key) => !SIGN_DOC_FIELDS.includes(key)) || REQUIRED_FIELDS.some((key) => !Object.hasOwn(doc, key))) {
    return NO_CHAIN_FACTS;
  }
  const text = ['account_number', 'chain_id', 'memo', 'sequence'].every((key) => typeof doc[key] === 'string');
  if (!text || !Array.isArray(doc['msgs'])) return NO_CHAIN_FACTS;
  let canonical: boolean;
  try {
    canonical = Buffer.from(serializeSignDoc(doc as unknown as StdSignDoc)).equals(Buffer.from(message, 'utf8'));
  } catch {
    canonical = false;
  }
  if (!canonical) return NO_CHAIN_FACTS;
  const network = `cosmos:${doc['chain_id']}`;
  const unknown: ChainFacts = {
    network: NETWORK_SELECTORS.COSMOS.pattern.test(network) ? network : null,
    facts: {},
    spend: { moved: [], complete: false },
  };
  const sends = [];
  for (const msg of doc['msgs'] as unknown[]) {
    const send = readMsgSend(msg, walletAddress);
    if (send === null) return unknown;
    sends.push(send);
  }
  const totals = new Map<string, bigint>();
  for (const { coins } of sends) {
    for (const { denom, amount } of coins) totals.set(denom, (totals.get(denom) ?? 0n) + amount);
  }
  const moved = [...totals].map(([asset, amount]) => ({ asset, amount: amount.toString() }));
  const only = sends.length === 1 && sends[0]!.coins.length === 1 ? sends[0]! : undefined;
  return {
    network: unknown.network,
    facts: only ? { to: only.to, value: only.coins[0]!.amount.toString(), asset: only.coins[0]!.denom } : {},
    spend: { moved, complete: true },
  };
}
