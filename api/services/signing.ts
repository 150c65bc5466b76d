/**
 * The signing routes' use cases. For every request: find the wallet in the caller's project, refuse it when
 * it cannot sign over REST (claimed, pre-generated without its user share, not ready, wrong type for the
 * operation), pass the one policy decision point, and have the adapter of the wallet's stored type
 * (chains/wallet-families.ts) compute what is to be signed, get it signed by the enclave (which combines the shares
 * and verifies its own signature) and encode the result in the chain's format. Transaction signatures queue
 * `transaction.signed` in the outbox before the answer leaves.
 */

import { refuseHeldNonce } from '../../actors/payment/payment-definition.ts';
import {
  isRawSignature,
  type SignatureOperation,
  type SignaturePolicy,
  type SignatureRequest,
  signIfAllowed,
} from '../../actors/signing/signature-policy.ts';
import type { WalletSigner } from '../../actors/signing/wallet-signer.ts';
import { ChainInputError } from '../../chains/chain-input-error.ts';
import { extractCosmosSignDocFacts } from '../../chains/cosmos/extract-cosmos-sign-doc-facts.ts';
import { invalidRequest, ServiceError } from '../../chains/domain/errors.ts';
import type { EventType } from '../../chains/domain/events.ts';
import {
  chainKey,
  isPaymentFamily,
  PAYMENT_FAMILIES,
  type PaymentFamily,
  type SolanaNetwork,
} from '../../chains/domain/payments.ts';
import type { ChainFacts } from '../../chains/domain/policies.ts';
import { schemeCurve, WALLET_TYPES, type WalletType } from '../../chains/domain/wallets.ts';
import { encodeEvmSignature } from '../../chains/evm/encode-evm-signature.ts';
import { extractAuthorizationFacts } from '../../chains/evm/extract-authorization-facts.ts';
import { extractTypedDataFacts } from '../../chains/evm/extract-typed-data-facts.ts';
import { prepareEvmAuthorization } from '../../chains/evm/prepare-evm-authorization.ts';
import { walletFamilies } from '../../chains/wallet-families.ts';
import type {
  PoolRunner,
  SignedTransaction,
  SigningOperation,
  TransactionRequest,
  WalletFamily,
} from '../../chains/wallet-family.ts';
import { MAX_SIGN_MESSAGE_BYTES } from '../../enclave/public.ts';
import type { Store } from '../../store/index.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import type { ChainPool } from '../chain-pool.ts';
import { type ChainStepName, type ChainSteps, chainSteps } from '../chain-steps.ts';
import type { Principal } from '../plugins/auth.ts';
import { fingerprintOf, type IdempotencyClaim } from './idempotency.ts';

/**
 * What the decision point needs of the HTTP request beside its decoded body: the `Idempotency-Key` (its claim, whose
 * fingerprint is the body's hash), the body as received (hashed only when permissions are on) and the initiator.
 */
export interface PolicyContext {
  idempotency: IdempotencyClaim | null;
  body: unknown;
  initiatorUserId: string | null;
}

/** A context without a request behind it (calls from inside the service). */
export const NO_POLICY_CONTEXT: PolicyContext = { idempotency: null, body: null, initiatorUserId: null };

/** The reference fields of a SignatureRequest for a request on `route`. */
export function referenceFields(
  route: string,
  ctx: PolicyContext,
): Pick<SignatureRequest, 'reference' | 'initiatorUserId'> {
  const claim = ctx.idempotency;
  return {
    reference: {
      idempotencyKey: claim?.key ?? null,
      route,
      bodyHash: () => claim?.fingerprint ?? fingerprintOf(ctx.body),
    },
    initiatorUserId: ctx.initiatorUserId,
  };
}

export interface SignTransactionRequest extends TransactionRequest {
  broadcast?: boolean;
  network?: SolanaNetwork;
}

export type SignedTransactionResult = SignedTransaction;

export interface SignedAuthorization {
  address: string;
  chainId: number;
  nonce: number;
  r: string;
  s: string;
  yParity: 0 | 1;
  signature: string;
}

const HEX_BODY = /^[0-9a-fA-F]*$/;

/**
 * What a chain function refused, as a 400 naming the field under `prefix`. Only for preparing partner input:
 * a ChainInputError from assembling a result means the enclave answered something wrong, a 500.
 */
export function chainInput<T>(prefix: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw asInvalidRequest(prefix, err);
  }
}

/** `chainInput` for a step that may run on the chain pool, or asks a node. */
export async function chainInputAsync<T>(prefix: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw asInvalidRequest(prefix, err);
  }
}

function asInvalidRequest(prefix: string, err: unknown): unknown {
  if (err instanceof ChainInputError) {
    return invalidRequest(err.message, { field: err.field ? `${prefix}.${err.field}` : prefix });
  }
  return err;
}

/** Refuses message text that cannot round-trip through UTF-8 (lone surrogates) or is too long to sign. */
function checkMessage(message: string, field: string): void {
  if (!message.isWellFormed()) {
    throw invalidRequest(`${field} must be well-formed Unicode text (it holds a lone surrogate)`, { field });
  }
  const length = Buffer.byteLength(message, 'utf8');
  if (length > MAX_SIGN_MESSAGE_BYTES) {
    throw invalidRequest(`${field} is ${length} bytes in UTF-8; at most ${MAX_SIGN_MESSAGE_BYTES} are signed`, {
      field,
    });
  }
}

/** Hex with or without 0x, even length, at least one byte. */
function rawBytes(data: string): Uint8Array {
  const body = data.startsWith('0x') || data.startsWith('0X') ? data.slice(2) : data;
  if (body.length === 0) throw invalidRequest('body.data must hold at least one byte of hex', { field: 'body.data' });
  if (body.length % 2 !== 0) {
    throw invalidRequest('body.data must be an even number of hex characters (whole bytes)', { field: 'body.data' });
  }
  if (!HEX_BODY.test(body)) {
    throw invalidRequest('body.data must contain only hex characters (0-9, a-f), optionally after 0x', {
      field: 'body.data',
    });
  }
  return Buffer.from(body, 'hex');
}

/** Signing use cases behind `/v1/wallets/{walletId}/sign-*`. */
export function createSigningService(deps: {
  store: Pick<Store, 'outbox' | 'writer' | 'transactions'>;
  /** The wallets' keys, through the enclave (shared with the payment actor's sign effect). */
  signer: Pick<WalletSigner, 'walletThatSigns' | 'signingWallet' | 'keyOf'>;
  policy: SignaturePolicy;
  /** Runs the steps whose cost grows with the input, on workers when the body is large. */
  chainPool: Pick<ChainPool, 'run'>;
  /**
   * Whether a key's webhook endpoint selects an event type. A signature changes no state, so `transaction.signed` is
   * written only when someone will hear it: signing for keys without such an endpoint costs no write. Default: yes.
   */
  webhooks?: { selects(apiKeyId: string, type: EventType): boolean };
  now?: () => number;
}) {
  const { store, signer, policy, chainPool } = deps;
  const selects = deps.webhooks?.selects ?? (() => true);
  const now = deps.now ?? Date.now;

  /** The wallet if this operation may sign with it over REST; otherwise the answer explaining why not. */
  function signableWallet(projectId: string, walletId: string, operation: SigningOperation): WalletRow {
    const wallet = signer.walletThatSigns(projectId, walletId);
    if (!walletFamilies[wallet.type].operations.includes(operation)) {
      throw new ServiceError('UNSUPPORTED_OPERATION', 400, unsupportedMessage(operation, wallet.type), {
        details: { walletId, walletType: wallet.type },
      });
    }
    return wallet;
  }

  /**
   * The one decision point, for a signing route's signature: `chainId` the chain the request names, `facts` what its
   * chain folder reads of it (asked only with permissions on), `ctx` the request's key, body and initiator. `sign`
   * runs only on allow; when it fails, the policy releases what the decision counted if no usable signature exists.
   */
  function signAuthorized<T>(
    principal: Principal,
    wallet: WalletRow,
    operation: SignatureOperation,
    chainId: string | null,
    facts: (() => ChainFacts) | undefined,
    ctx: PolicyContext,
    sign: () => Promise<T>,
    signatureIdentity?: string,
  ): Promise<T> {
    const rawSignature = isRawSignature(operation, wallet.type);
    return signIfAllowed(
      policy,
      {
        principal,
        wallet,
        operation,
        rawSignature,
        chainId,
        ...(facts ? { facts } : {}),
        ...referenceFields(operation, ctx),
        ...(signatureIdentity === undefined ? {} : { signatureIdentity }),
      },
      sign,
    );
  }

  /** The pool steps as the adapters call them: each runs on the chain pool, given this request's body size. */
  function poolRunner(bodyBytes: number): PoolRunner<ChainSteps> {
    const steps = Object.keys(chainSteps) as ChainStepName[];
    return Object.fromEntries(
      steps.map((step) => [step, (...args: never) => chainPool.run(step, args, bodyBytes)]),
    ) as PoolRunner<ChainSteps>;
  }

  /**
   * Queues `transaction.signed` and waits until it is on disk: every REST signature emits one (chainId null for
   * message and raw signing, the domain's for typed data, the authorization's for EIP-7702) when the key's endpoint
   * selects it.
   */
  async function recordTransactionSigned(principal: Principal, wallet: WalletRow, chainId: string | null) {
    if (!selects(principal.keyId, 'transaction.signed')) return;
    const signedAt = new Date(now()).toISOString();
    await store.writer.write(() =>
      store.outbox.append({
        projectId: wallet.projectId,
        apiKeyId: principal.keyId,
        type: 'transaction.signed',
        createdAt: signedAt,
        data: {
          userId: wallet.id,
          walletId: wallet.id,
          walletAddress: wallet.address,
          chainId,
          signedAt,
        },
      }),
    );
  }

  return {
    /** `sign-message`: the wallet's type decides the format (spec: message signing by type). */
    async signMessage(
      principal: Principal,
      walletId: string,
      message: string,
      ctx: PolicyContext = NO_POLICY_CONTEXT,
    ): Promise<{ signature: string }> {
      const wallet = signableWallet(principal.projectId, walletId, 'sign-message');
      checkMessage(message, 'body.message');
      // A Cosmos message may be an Amino sign doc: its MsgSend is a payment the policy can read.
      const facts = wallet.type === 'COSMOS' ? () => extractCosmosSignDocFacts(message, wallet.address!) : undefined;
      const signature = await signAuthorized(principal, wallet, 'sign-message', null, facts, ctx, () =>
        walletFamilies[wallet.type].signMessage(message, signer.keyOf(wallet)),
      );
      await recordTransactionSigned(principal, wallet, null);
      return { signature };
    },

    /**
     * `sign-raw`: exactly the given bytes, no prefix and no hashing. A secp256k1 (DKLS) wallet signs a 32-byte
     * digest; an ed25519 wallet signs the bytes themselves.
     */
    async signRaw(
      principal: Principal,
      walletId: string,
      body: { data: string; walletType?: WalletType },
      ctx: PolicyContext = NO_POLICY_CONTEXT,
    ): Promise<{ signature: string }> {
      const wallet = signableWallet(principal.projectId, walletId, 'sign-raw');
      if (body.walletType !== undefined && body.walletType !== wallet.type) {
        throw invalidRequest(`body.walletType is ${body.walletType} but the wallet is ${wallet.type}`, {
          field: 'body.walletType',
        });
      }
      const data = rawBytes(body.data);
      const family = walletFamilies[wallet.type];
      if (family.rawDigestBytes !== undefined && data.length !== family.rawDigestBytes) {
        throw invalidRequest(
          `a ${wallet.type} (${schemeCurve(family.scheme)}) wallet signs a ${family.rawDigestBytes}-byte digest and body.data is ${data.length} bytes: hash the payload first (Cosmos: the SHA-256 of the SignDoc bytes; EVM: the Keccak-256 hash)`,
          { field: 'body.data' },
        );
      }
      if (data.length > MAX_SIGN_MESSAGE_BYTES) {
        throw invalidRequest(`body.data is ${data.length} bytes; at most ${MAX_SIGN_MESSAGE_BYTES} are signed`, {
          field: 'body.data',
        });
      }
      const signature = await signAuthorized(principal, wallet, 'sign-raw', null, undefined, ctx, () =>
        family.signRaw(data, signer.keyOf(wallet)),
      );
      await recordTransactionSigned(principal, wallet, null);
      return { signature };
    },

    /**
     * `sign-transaction` for EVM, SOLANA, STELLAR and SUI wallets, sign-only (the route sends `broadcast: true` to
     * the payment service). `bodyBytes`: the request body's size (Infinity when unknown), which decides whether EVM,
     * Stellar and Sui steps run on the chain pool.
     */
    async signTransaction(
      principal: Principal,
      walletId: string,
      body: SignTransactionRequest,
      bodyBytes: number,
      ctx: PolicyContext = NO_POLICY_CONTEXT,
    ): Promise<SignedTransactionResult> {
      const wallet = signableWallet(principal.projectId, walletId, 'sign-transaction');
      checkTransactionFields(wallet.type, body);
      const { prepareTransaction } = walletFamilies[wallet.type];
      if (!prepareTransaction) {
        throw new Error(`the ${wallet.type} adapter lists sign-transaction but cannot prepare one`);
      }
      const prepared = await chainInputAsync('body', () =>
        prepareTransaction(body, signer.signingWallet(wallet), poolRunner(bodyBytes)),
      );
      if (prepared.nonce !== undefined && prepared.chainId !== null && isPaymentFamily(wallet.type)) {
        refuseHeldNonce(store.transactions, wallet.id, chainKey(wallet.type, prepared.chainId), prepared.nonce);
      }
      const signed = await signAuthorized(
        principal,
        wallet,
        'sign-transaction',
        prepared.chainId,
        prepared.facts,
        ctx,
        () => prepared.sign(signer.keyOf(wallet)),
        prepared.nonce === undefined ? undefined : `nonce:${prepared.nonce}`,
      );
      await recordTransactionSigned(principal, wallet, prepared.chainId);
      return signed;
    },

    /** `sign-typed-data`: EIP-712, with EIP712Domain derived from `domain`. `bodyBytes` as for signTransaction. */
    async signTypedData(
      principal: Principal,
      walletId: string,
      typedData: unknown,
      bodyBytes: number,
      ctx: PolicyContext = NO_POLICY_CONTEXT,
    ): Promise<{ signature: string }> {
      const wallet = signableWallet(principal.projectId, walletId, 'sign-typed-data');
      const digest = await chainInputAsync('body.typedData', () =>
        chainPool.run('hashEvmTypedData', [typedData], bodyBytes),
      );
      const chainId = (typedData as { domain?: { chainId?: unknown } }).domain?.chainId;
      const domainChainId = chainId === undefined ? null : String(chainId);
      const signature = await signAuthorized(
        principal,
        wallet,
        'sign-typed-data',
        domainChainId,
        () => extractTypedDataFacts(typedData),
        ctx,
        async () => encodeEvmSignature(await signer.keyOf(wallet).signSecp256k1(digest)),
      );
      await recordTransactionSigned(principal, wallet, domainChainId);
      return { signature };
    },

    /** `sign-authorization`: an EIP-7702 authorization tuple. */
    async signAuthorization(
      principal: Principal,
      walletId: string,
      authorization: { address?: string; contractAddress?: string; chainId: number; nonce: number },
      ctx: PolicyContext = NO_POLICY_CONTEXT,
    ): Promise<SignedAuthorization> {
      const wallet = signableWallet(principal.projectId, walletId, 'sign-authorization');
      const prepared = chainInput('body.authorization', () => prepareEvmAuthorization(authorization));
      const signature = await signAuthorized(
        principal,
        wallet,
        'sign-authorization',
        String(prepared.chainId),
        () => extractAuthorizationFacts(prepared),
        ctx,
        () => signer.keyOf(wallet).signSecp256k1(prepared.digest),
      );
      await recordTransactionSigned(principal, wallet, String(prepared.chainId));
      const rs = Buffer.from(signature.rs);
      return {
        address: prepared.address,
        chainId: prepared.chainId,
        nonce: prepared.nonce,
        r: `0x${rs.subarray(0, 32).toString('hex')}`,
        s: `0x${rs.subarray(32, 64).toString('hex')}`,
        yParity: signature.recovery,
        signature: encodeEvmSignature(signature),
      };
    },

    /**
     * The wallet a payment route (transfer, broadcasting sign-transaction) may sign with, read and checked once for
     * the request, or the answer explaining why not.
     */
    paymentWallet(
      principal: Principal,
      walletId: string,
      operation: 'transfer' | 'sign-transaction',
    ): WalletRow & { type: PaymentFamily } {
      const wallet =
        operation === 'transfer'
          ? signer.walletThatSigns(principal.projectId, walletId)
          : signableWallet(principal.projectId, walletId, operation);
      if (!isPaymentFamily(wallet.type)) {
        throw operation === 'transfer'
          ? new ServiceError(
              'UNSUPPORTED_OPERATION',
              400,
              `transfer is not available for ${wallet.type} wallets (supported: ${PAYMENT_FAMILIES.join(', ')})`,
              { details: { walletId, walletType: wallet.type } },
            )
          : new ServiceError(
              'BROADCAST_NOT_SUPPORTED',
              400,
              `${wallet.type} transactions are sign-only: broadcast: true is not supported`,
              { details: { field: 'body.broadcast' } },
            );
      }
      return wallet as WalletRow & { type: PaymentFamily };
    },

    /** The one policy decision point, for a payment route's sign-only signature (no record): `sign` runs on allow. */
    signAuthorized,
    /** The decision point itself: a broadcasting payment decides inside the transaction of its record. */
    policy,
  };
}

export type SigningService = ReturnType<typeof createSigningService>;

function unsupportedMessage(operation: SigningOperation, type: WalletType): string {
  const hint = walletFamilies[type].unsupportedHints?.[operation];
  if (hint !== undefined) return hint;
  const supported = WALLET_TYPES.filter((t) => walletFamilies[t].operations.includes(operation)).join(', ');
  return `${operation} is not available for ${type} wallets (supported: ${supported})`;
}

/** The types whose `sign-transaction` takes a field in the given way, for the refusal's message. */
function typesWhere(test: (f: NonNullable<WalletFamily['transactionFields']>) => boolean): string {
  return WALLET_TYPES.filter((t) => {
    const f = (walletFamilies[t] as WalletFamily).transactionFields;
    return f !== undefined && test(f);
  }).join(', ');
}

/**
 * The `sign-transaction` fields each type takes (its adapter's `transactionFields`), for signing and for broadcast
 * alike: a field another type uses is refused rather than ignored.
 */
export function checkTransactionFields(type: WalletType, body: SignTransactionRequest): void {
  const fields = (walletFamilies[type] as WalletFamily).transactionFields;
  if (!fields) throw new Error(`the ${type} adapter lists sign-transaction without its transaction fields`);
  if (fields.transaction === 'object') {
    if (typeof body.transaction !== 'object' || body.transaction === null || Array.isArray(body.transaction)) {
      throw invalidRequest(`body.transaction must be an ${type} transaction object for an ${type} wallet`, {
        field: 'body.transaction',
      });
    }
  } else if (typeof body.transaction !== 'string') {
    throw invalidRequest(`body.transaction must be a base64 string for a ${type} wallet`, {
      field: 'body.transaction',
    });
  }
  if (body.network !== undefined && !fields.network) {
    throw invalidRequest(`body.network applies to ${typesWhere((f) => f.network)} wallets only, not ${type}`, {
      field: 'body.network',
    });
  }
  if (fields.networkPassphrase === 'required' && body.networkPassphrase === undefined) {
    throw invalidRequest(
      `body.networkPassphrase is required for ${type}: the exact passphrase the transaction was built for`,
      { field: 'body.networkPassphrase' },
    );
  }
  if (body.networkPassphrase !== undefined && fields.networkPassphrase === 'refused') {
    throw invalidRequest(
      `body.networkPassphrase applies to ${typesWhere((f) => f.networkPassphrase === 'required')} (ignored for ${typesWhere((f) => f.networkPassphrase === 'ignored')}), not ${type}`,
      { field: 'body.networkPassphrase' },
    );
  }
}
