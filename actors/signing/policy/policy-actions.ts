/**
 * Which policy action a signing request is, and which actions a wallet type's requests can ever be: the bridge from
 * the signing routes (and transfers, and yield later) to the policy vocabulary of chains/domain/policies.ts.
 */
import { isPaymentFamily } from '../../../chains/domain/payments.ts';
import type { PolicyAction, RequestAction } from '../../../chains/domain/policies.ts';
import type { WalletType } from '../../../chains/domain/wallets.ts';
import { walletFamilies } from '../../../chains/wallet-families.ts';
import type { SigningOperation } from '../../../chains/wallet-family.ts';

const ROUTE_ACTIONS: Readonly<Record<SigningOperation | 'transfer', RequestAction>> = {
  'sign-message': 'sign_message',
  'sign-raw': 'sign_raw',
  'sign-transaction': 'sign_transaction',
  'sign-typed-data': 'sign_typed_data',
  'sign-authorization': 'sign_authorization',
  transfer: 'transfer',
};

/** The policy action of a signing route or a transfer (`raw_signature` is added beside it, see isRawSignature). */
export function requestActionOf(operation: SigningOperation | 'transfer'): RequestAction {
  return ROUTE_ACTIONS[operation];
}

const possible = new Map<WalletType, ReadonlySet<PolicyAction>>();

/**
 * The actions a request on a wallet of `type` can have: its adapter's signing routes, `raw_signature` (every type has
 * `sign-raw`), `transfer` for the payment families, and yield on EVM (the spec's yield runs on EVM chains). A rule
 * naming another action could never apply, so validation refuses it.
 */
export function actionsOfWalletType(type: WalletType): ReadonlySet<PolicyAction> {
  let actions = possible.get(type);
  if (!actions) {
    const set = new Set<PolicyAction>(walletFamilies[type].operations.map((operation) => ROUTE_ACTIONS[operation]));
    set.add('raw_signature');
    if (isPaymentFamily(type)) set.add('transfer');
    if (type === 'EVM') {
      set.add('yield_deposit');
      set.add('yield_withdraw');
    }
    actions = set;
    possible.set(type, actions);
  }
  return actions;
}
