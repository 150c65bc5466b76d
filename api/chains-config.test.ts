import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readChainsFile } from './chains-config.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wcs-chains-file-'));

/** The problems an operator reads for a chains file holding `body`, without the file name. */
function problems(body: unknown): string[] {
  const file = path.join(dir, 'chains.json');
  fs.writeFileSync(file, JSON.stringify(body));
  return readChainsFile(file).problems.map((p) => p.slice(`CHAINS_FILE ${file}: `.length));
}

test('a valid file has no problems; each family section and yield are read', () => {
  const body = {
    evm: [{ chainId: 1, rpcUrl: 'https://rpc.example', environment: 'production' }],
    solana: [{ network: 'SOLANA_DEVNET', rpcUrl: 'http://127.0.0.1:8899' }],
    yield: [{ chainId: 1, pool: `0x${'1'.repeat(40)}`, usdc: `0x${'2'.repeat(40)}` }],
  };
  assert.deepEqual(problems(body), []);
});

test('a wrong environment names the allowed values', () => {
  assert.deepEqual(problems({ evm: [{ chainId: 1, rpcUrl: 'http://x', environment: 'prod' }] }), [
    '/evm/0/environment must be one of: development | production | any',
  ]);
  assert.deepEqual(problems({ solana: [{ network: 'SOLANA_TESTNET', rpcUrl: 'http://x' }] }), [
    '/solana/0/network must be one of: SOLANA | SOLANA_DEVNET',
  ]);
});

test('a misspelt key is one missing field and one unknown field with the likely name, nothing more', () => {
  assert.deepEqual(problems({ evm: [{ chainId: 1, rpcUrl: 'http://x', enviroment: 'production' }] }), [
    '/evm/0/environment is required (one of: development | production | any)',
    '/evm/0/enviroment is not a known field (did you mean environment?)',
  ]);
  assert.deepEqual(problems({ evms: [] }), ['/evms is not a known field (did you mean evm?)']);
});

test('a chain listed twice is named', () => {
  const entry = { chainId: 5, rpcUrl: 'http://x', environment: 'any' };
  assert.deepEqual(problems({ evm: [entry, entry] }), ['evm chain 5 is listed twice']);
});

test('yield entries: a yield chain that has an evm entry, once, with well-formed distinct addresses', () => {
  const evm = [
    { chainId: 1, rpcUrl: 'http://x', environment: 'any' },
    { chainId: 31337, rpcUrl: 'http://y', environment: 'any' },
  ];
  const pool = '0x87870Bca3F3fD6335C3F4ce8392D69350B4fA4E2';
  const usdc = '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48';
  assert.deepEqual(problems({ evm, yield: [{ chainId: 1, pool, usdc }] }), []);
  assert.deepEqual(problems({ evm, yield: [{ chainId: 31337, pool, usdc }] }), [
    '/yield/0/chainId 31337 is not a yield chain (one of: 1 | 8453 | 11155111)',
  ]);
  assert.deepEqual(problems({ evm, yield: [{ chainId: 8453, pool, usdc }] }), [
    'yield chain 8453 has no evm entry: add one with its rpcUrl',
  ]);
  assert.deepEqual(
    problems({
      evm,
      yield: [
        { chainId: 1, pool, usdc },
        { chainId: 1, pool, usdc },
      ],
    }),
    ['yield chain 1 is listed twice'],
  );
  assert.deepEqual(problems({ evm, yield: [{ chainId: 1, pool: pool.replace('B', 'b'), usdc }] }), [
    '/yield/0/pool has an invalid EIP-55 checksum (its mixed case does not match its hex)',
  ]);
  assert.deepEqual(problems({ evm, yield: [{ chainId: 1, pool, usdc: pool.toLowerCase() }] }), [
    '/yield/0: pool and usdc are the same address',
  ]);
  assert.deepEqual(problems({ evm, yield: [{ chainId: 1, pool: '0x1234', usdc }] }), [
    "/yield/0/pool Expected string to match '^0x[0-9a-fA-F]{40}$'",
  ]);
  assert.deepEqual(problems({ evm, yield: [{ chainId: 1, pool, usdc, aToken: pool }] }), [
    '/yield/0/aToken is not a known field',
  ]);
});
