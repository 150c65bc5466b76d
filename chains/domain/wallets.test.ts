import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultScheme, isSchemeSupported, SCHEMES, schemeCurve, WALLET_TYPES, type WalletType } from './wallets.ts';

describe('wallet types and schemes', () => {
  it('lists the five types and two schemes of the spec', () => {
    assert.deepEqual(WALLET_TYPES, ['EVM', 'COSMOS', 'SOLANA', 'STELLAR', 'SUI']);
    assert.deepEqual(SCHEMES, ['DKLS', 'ED25519']);
  });

  it('defaults to DKLS for EVM and COSMOS and to ED25519 for SOLANA, STELLAR and SUI', () => {
    assert.deepEqual(
      WALLET_TYPES.map((type) => defaultScheme(type)),
      ['DKLS', 'DKLS', 'ED25519', 'ED25519', 'ED25519'],
    );
  });

  it('supports exactly one scheme per type: the default', () => {
    for (const type of WALLET_TYPES) {
      for (const scheme of SCHEMES) {
        assert.equal(isSchemeSupported(type, scheme), scheme === defaultScheme(type), `${type}/${scheme}`);
      }
    }
    assert.equal(isSchemeSupported('EVM', 'ED25519'), false);
    assert.equal(isSchemeSupported('SOLANA', 'DKLS'), false);
  });

  it('maps schemes to curves', () => {
    assert.equal(schemeCurve('DKLS'), 'secp256k1');
    assert.equal(schemeCurve('ED25519'), 'ed25519');
  });

  it('refuses unknown values arriving at runtime', () => {
    assert.throws(() => defaultScheme('BITCOIN' as WalletType), /Unknown wallet type: BITCOIN/);
    assert.throws(() => defaultScheme('toString' as WalletType), /Unknown wallet type: toString/);
    assert.equal(isSchemeSupported('toString' as WalletType, 'DKLS'), false);
    assert.throws(() => schemeCurve('ECDSA' as 'DKLS'), /Unknown scheme: ECDSA/);
  });
});
