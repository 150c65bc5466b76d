/**
 * Valid inputs the request fuzzer starts from, so that its mutations reach the chains' parsers and the
 * enclave instead of stopping at the schema: a transaction of each chain built with that chain's own
 * library for the fuzzed wallet, EIP-712 typed data, and share-migration payloads properly encrypted to the
 * enclave (whose plaintexts are then wrong in assorted ways).
 */
import { randomBytes } from 'node:crypto';
import { Transaction as SuiTransaction } from '@mysten/sui/transactions';
import {
  PublicKey,
  Keypair as SolanaKeypair,
  Transaction as SolanaTransaction,
  SystemProgram,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import {
  Account,
  Asset,
  Networks,
  Operation,
  Keypair as StellarKeypair,
  TransactionBuilder,
} from '@stellar/stellar-sdk';
import bs58 from 'bs58';
import { type EnclaveKey, encryptForEnclave, shareEntry, sharePlaintext } from './migration-client.ts';

/** What the fuzzer mutates, per route family. */
export interface FuzzSeeds {
  /** EVM transaction objects (type 2 and type 0) for the EVM wallet. */
  evmTransactions: Array<Record<string, unknown>>;
  /** Serialized transactions of the matching wallets: Solana legacy and v0, Stellar XDR, Sui BCS. */
  encodedTransactions: { SOLANA: Buffer[]; STELLAR: Buffer[]; SUI: Buffer[] };
  /** Network passphrases a Stellar transaction may name. */
  passphrases: string[];
  /** `encryptedPayload` strings that decrypt in the enclave (to plaintexts of every wrong shape). */
  migrationPayloads: string[];
}

/** Addresses of the wallets the fuzzer signs with. */
export interface SeedWallets {
  EVM: string;
  SOLANA: string;
  STELLAR: string;
  SUI: string;
  /** A pre-generated wallet waiting for its user share: its id and scheme. */
  pregenerated: { id: string; scheme: string };
}

/** Builds the seeds (a fraction of a second: the Sui build is the slow part). */
export async function buildFuzzSeeds(wallets: SeedWallets, enclaveKey: EnclaveKey): Promise<FuzzSeeds> {
  const evmTransactions = [
    {
      to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      value: '1000000000000000',
      chainId: 31337,
      type: 2,
      nonce: 7,
      gasLimit: '21000',
      maxFeePerGas: '30000000000',
      maxPriorityFeePerGas: '1000000000',
      data: '0xdeadbeef',
    },
    {
      to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      value: '5',
      chainId: 1,
      type: 0,
      nonce: 0,
      gasLimit: '21000',
      gasPrice: '7',
    },
  ];

  const payer = new PublicKey(wallets.SOLANA);
  const recentBlockhash = SolanaKeypair.generate().publicKey.toBase58();
  const ix = SystemProgram.transfer({ fromPubkey: payer, toPubkey: SolanaKeypair.generate().publicKey, lamports: 1 });
  const legacy = new SolanaTransaction({ feePayer: payer, recentBlockhash })
    .add(ix)
    .serialize({ requireAllSignatures: false, verifySignatures: false });
  const v0 = new VersionedTransaction(
    new TransactionMessage({ payerKey: payer, recentBlockhash, instructions: [ix] }).compileToV0Message(),
  ).serialize();

  const stellar = new TransactionBuilder(new Account(wallets.STELLAR, '41'), {
    fee: '100',
    networkPassphrase: Networks.TESTNET,
  })
    .addOperation(
      Operation.payment({ destination: StellarKeypair.random().publicKey(), asset: Asset.native(), amount: '1' }),
    )
    .setTimeout(30)
    .build()
    .toXDR();

  const sui = new SuiTransaction();
  sui.setSender(wallets.SUI);
  sui.setGasPrice(1000);
  sui.setGasBudget(10_000_000);
  sui.setGasPayment([{ objectId: `0x${'11'.repeat(32)}`, version: '1', digest: bs58.encode(randomBytes(32)) }]);
  const [coin] = sui.splitCoins(sui.gas, [1000]);
  sui.transferObjects([coin!], `0x${'22'.repeat(32)}`);
  const suiBytes = await sui.build();

  const { id, scheme } = wallets.pregenerated;
  const plaintexts = [
    sharePlaintext([shareEntry(id, scheme, randomBytes(32).toString('hex'))]),
    sharePlaintext([shareEntry(id, scheme === 'DKLS' ? 'ED25519' : 'DKLS', randomBytes(32).toString('hex'))]),
    sharePlaintext([shareEntry(id, scheme, 'not hex')]),
    sharePlaintext([{ ...shareEntry(id, scheme, '00'), signer: '' }]),
    sharePlaintext([]),
    '{"shares":null}',
    '{"shares":[1,2,3]}',
    `{"shares":[${'{"userId":"a"},'.repeat(50)}{}]}`,
    'not json at all',
    '',
    '\u0000\uffff',
    JSON.stringify({ shares: [{ userId: id, walletId: id, walletScheme: scheme, signer: 'ab'.repeat(5000) }] }),
  ];
  const migrationPayloads = plaintexts.map((p) => JSON.stringify(encryptForEnclave(p, enclaveKey)));

  return {
    evmTransactions,
    encodedTransactions: {
      SOLANA: [Buffer.from(legacy), Buffer.from(v0)],
      STELLAR: [Buffer.from(stellar, 'base64')],
      SUI: [Buffer.from(suiBytes)],
    },
    passphrases: [Networks.TESTNET, Networks.PUBLIC, 'Test SDF Network ; September 2015 ', 'x'],
    migrationPayloads,
  };
}
