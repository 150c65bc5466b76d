import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ChainEnvironment, chainKey } from '../chains/domain/payments.ts';
import type { PaymentChain } from '../chains/payment-chain.ts';
import { createChainRegistry } from './chain-registry.ts';

/** A chain that is only its identity: the registry never calls it. */
function chainOf(family: 'EVM' | 'SOLANA', key: string, environment: ChainEnvironment): PaymentChain {
  const unused = () => Promise.reject(new Error('not called by the registry'));
  return {
    family,
    key,
    environment,
    buildTransfer: unused,
    estimateFee: unused,
    broadcast: unused,
    observe: unused,
    checkPartnerTransaction: unused,
  };
}

const registry = createChainRegistry(
  {
    evm: [
      { chainId: 1, rpcUrl: 'http://127.0.0.1:1', environment: 'production' },
      { chainId: 11155111, rpcUrl: 'http://127.0.0.1:2', environment: 'development' },
      { chainId: 31337, rpcUrl: 'http://127.0.0.1:3', environment: 'any' },
    ],
    solana: [
      { network: 'SOLANA', rpcUrl: 'http://127.0.0.1:4' },
      { network: 'SOLANA_DEVNET', rpcUrl: 'http://127.0.0.1:5' },
    ],
  },
  (family, c) => chainOf(family, chainKey(family, c.chainRef), c.environment),
);

function refusal(run: () => unknown): { code: string; httpStatus: number } {
  try {
    run();
  } catch (err) {
    return err as { code: string; httpStatus: number };
  }
  throw new Error('not refused');
}

test('development keys reach development and any chains only; production keys production and any', () => {
  assert.equal(registry.resolve('development', 'EVM', '11155111').key, 'evm:11155111');
  assert.equal(registry.resolve('development', 'EVM', '31337').key, 'evm:31337');
  const e = refusal(() => registry.resolve('development', 'EVM', '1'));
  assert.deepEqual([e.code, e.httpStatus], ['CHAIN_NOT_ALLOWED', 403]);
  assert.equal(registry.resolve('production', 'EVM', '1').key, 'evm:1');
  assert.equal(registry.resolve('production', 'EVM', '31337').key, 'evm:31337');
  assert.equal(refusal(() => registry.resolve('production', 'EVM', '11155111')).code, 'CHAIN_NOT_ALLOWED');
});

test('Solana entries without an environment: devnet serves every key, mainnet production keys only', () => {
  assert.equal(registry.resolve('development', 'SOLANA', 'SOLANA_DEVNET').key, 'solana:SOLANA_DEVNET');
  assert.equal(registry.resolve('production', 'SOLANA', 'SOLANA_DEVNET').key, 'solana:SOLANA_DEVNET');
  assert.equal(registry.resolve('production', 'SOLANA', 'SOLANA').key, 'solana:SOLANA');
  assert.equal(refusal(() => registry.resolve('development', 'SOLANA', 'SOLANA')).code, 'CHAIN_NOT_ALLOWED');
});

test('a chain absent from CHAINS_FILE is a 400 naming the field', () => {
  const e = refusal(() => registry.resolve('production', 'EVM', '8453')) as {
    code: string;
    httpStatus: number;
    details?: { field?: string };
  };
  assert.deepEqual([e.code, e.httpStatus, e.details?.field], ['CHAIN_NOT_CONFIGURED', 400, 'body.chainId']);
  assert.equal(registry.get('evm:8453'), undefined);
  assert.equal(registry.all().length, 5);
});

test('CHAIN_NOT_CONFIGURED lists the chains this key may use, in the message and as availableChains', () => {
  const dev = refusal(() => registry.resolve('development', 'EVM', '8453')) as unknown as {
    code: string;
    message: string;
    details?: { availableChains?: unknown };
  };
  assert.equal(dev.code, 'CHAIN_NOT_CONFIGURED');
  assert.deepEqual(dev.details?.availableChains, [
    { type: 'EVM', chainId: '11155111' },
    { type: 'EVM', chainId: '31337' },
    { type: 'SOLANA', network: 'SOLANA_DEVNET' },
  ]);
  assert.match(dev.message, /this key may use: EVM chain 11155111, EVM chain 31337, Solana network SOLANA_DEVNET$/);
  const prod = refusal(() => registry.resolve('production', 'SOLANA', 'SOLANA_TESTNET')) as {
    details?: { availableChains?: Array<{ type: string }>; field?: string };
  };
  assert.equal(prod.details?.field, 'body.network');
  assert.deepEqual(
    prod.details?.availableChains?.map((c) => Object.values(c).join(' ')),
    ['EVM 1', 'EVM 31337', 'SOLANA SOLANA', 'SOLANA SOLANA_DEVNET'],
  );
  const none = createChainRegistry({}).resolve.bind(null, 'production', 'EVM', '1');
  assert.match((refusal(none) as unknown as { message: string }).message, /no chain is configured for this key/);
});
