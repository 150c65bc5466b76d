import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EIP712_MAIL } from '../../fixtures/eip712-mail.ts';
import { ChainInputError } from '../chain-input-error.ts';
import { ANY_NETWORK } from '../domain/policies.ts';
import { extractAuthorizationFacts } from './extract-authorization-facts.ts';
import { extractTypedDataFacts } from './extract-typed-data-facts.ts';
import { hashEvmTypedData } from './hash-evm-typed-data.ts';
import { prepareEvmAuthorization } from './prepare-evm-authorization.ts';

describe('extractTypedDataFacts', () => {
  it("reads the domain and primary type of EIP-712's own example, on its chain", () => {
    hashEvmTypedData(EIP712_MAIL);
    assert.deepEqual(extractTypedDataFacts(EIP712_MAIL), {
      network: 'eip155:1',
      facts: {
        'typedData.domain.name': 'Ether Mail',
        'typedData.domain.version': '1',
        'typedData.domain.chainId': '1',
        'typedData.domain.verifyingContract': '0xcccccccccccccccccccccccccccccccccccccccc',
        'typedData.primaryType': 'Mail',
      },
      spend: { moved: [], complete: false },
    });
  });

  it('names no network without a chain id, any network for chain id 0, and reads decimal-string chain ids', () => {
    const { chainId: _chainId, ...noChain } = EIP712_MAIL.domain;
    assert.equal(extractTypedDataFacts({ ...EIP712_MAIL, domain: noChain }).network, null);
    assert.equal(extractTypedDataFacts({ ...EIP712_MAIL, domain: { ...noChain, chainId: 0 } }).network, ANY_NETWORK);
    const big = extractTypedDataFacts({ ...EIP712_MAIL, domain: { ...noChain, chainId: '8453' } });
    assert.equal(big.network, 'eip155:8453');
    assert.equal(big.facts['typedData.domain.chainId'], '8453');
    assert.deepEqual(extractTypedDataFacts({ ...EIP712_MAIL, domain: {} }).facts, { 'typedData.primaryType': 'Mail' });
  });

  it('refuses a domain the signing route would refuse', () => {
    assert.throws(() => extractTypedDataFacts({ ...EIP712_MAIL, domain: { chainId: -1 } }), ChainInputError);
  });
});

describe('extractAuthorizationFacts', () => {
  const address = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

  it('reads the delegate and chain of an EIP-7702 authorization; chain id 0 meets every selector', () => {
    assert.deepEqual(extractAuthorizationFacts(prepareEvmAuthorization({ address, chainId: 1, nonce: 0 })), {
      network: 'eip155:1',
      facts: { 'authorization.address': address.toLowerCase(), 'authorization.chainId': '1' },
      spend: { moved: [], complete: false },
    });
    const anyChain = extractAuthorizationFacts(
      prepareEvmAuthorization({ contractAddress: address, chainId: 0, nonce: 3 }),
    );
    assert.equal(anyChain.network, ANY_NETWORK);
    assert.equal(anyChain.facts['authorization.chainId'], '0');
  });
});
