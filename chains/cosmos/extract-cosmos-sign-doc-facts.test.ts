import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type AminoMsg, makeSignDoc, type StdSignDoc, serializeSignDoc } from '@cosmjs/amino';
import { toBech32 } from '@cosmjs/encoding';
import { NO_CHAIN_FACTS } from '../domain/policies.ts';
import { extractCosmosSignDocFacts } from './extract-cosmos-sign-doc-facts.ts';

const walletKey = new Uint8Array(20).fill(1);
const wallet = toBech32('cosmos', walletKey);
const recipient = toBech32('cosmos', new Uint8Array(20).fill(2));
const FEE = { amount: [{ denom: 'uatom', amount: '500' }], gas: '200000' };

const send = (amount: Array<{ denom: string; amount: string }>, from = wallet): AminoMsg => ({
  type: 'cosmos-sdk/MsgSend',
  value: { from_address: from, to_address: recipient, amount },
});

/** The Amino JSON sign document a wallet signs with sign-message, in its canonical bytes. */
function signDoc(msgs: AminoMsg[], chainId = 'cosmoshub-4'): string {
  return Buffer.from(serializeSignDoc(makeSignDoc(msgs, FEE, chainId, 'memo <&>', 7, 3))).toString('utf8');
}

const unknown = (network: string | null) => ({ network, facts: {}, spend: { moved: [], complete: false } });

describe('extractCosmosSignDocFacts', () => {
  it('reads a MsgSend of one coin from the wallet: network, recipient, amount and denom', () => {
    assert.deepEqual(extractCosmosSignDocFacts(signDoc([send([{ denom: 'uatom', amount: '1000000' }])]), wallet), {
      network: 'cosmos:cosmoshub-4',
      facts: { to: recipient, value: '1000000', asset: 'uatom' },
      spend: { moved: [{ asset: 'uatom', amount: '1000000' }], complete: true },
    });
  });

  it('takes the same account under another prefix as the wallet', () => {
    const osmo = toBech32('osmo', walletKey);
    const read = extractCosmosSignDocFacts(
      signDoc([send([{ denom: 'uosmo', amount: '5' }], osmo)], 'osmosis-1'),
      wallet,
    );
    assert.equal(read.network, 'cosmos:osmosis-1');
    assert.equal(read.facts.value, '5');
  });

  it('sums several sends and coins per denom without naming a payment', () => {
    const ibc = 'ibc/27394FB092D2ECCD56123C74F36E4C1F926001CEADA9CA97EA622B25F41E5EB2';
    const read = extractCosmosSignDocFacts(
      signDoc([
        send([
          { denom: 'uatom', amount: '1' },
          { denom: ibc, amount: '2' },
        ]),
        send([{ denom: 'uatom', amount: '3' }]),
      ]),
      wallet,
    );
    assert.deepEqual(read, {
      network: 'cosmos:cosmoshub-4',
      facts: {},
      spend: {
        moved: [
          { asset: 'uatom', amount: '4' },
          { asset: ibc, amount: '2' },
        ],
        complete: true,
      },
    });
  });

  it('knows only the network of a document with another message or a send from another account', () => {
    const delegate = {
      type: 'cosmos-sdk/MsgDelegate',
      value: { delegator_address: wallet, validator_address: 'x', amount: { denom: 'uatom', amount: '1' } },
    };
    assert.deepEqual(extractCosmosSignDocFacts(signDoc([delegate]), wallet), unknown('cosmos:cosmoshub-4'));
    assert.deepEqual(
      extractCosmosSignDocFacts(signDoc([send([{ denom: 'uatom', amount: '1' }], recipient)]), wallet),
      unknown('cosmos:cosmoshub-4'),
    );
    assert.deepEqual(
      extractCosmosSignDocFacts(signDoc([send([{ denom: 'uatom', amount: '-1' }])]), wallet),
      unknown('cosmos:cosmoshub-4'),
    );
    assert.equal(
      extractCosmosSignDocFacts(signDoc([send([{ denom: 'uatom', amount: '1' }])], 'bad chain'), wallet).network,
      null,
    );
  });

  it('reads nothing of text that is not a canonical sign document: the facts describe exactly the bytes signed', () => {
    const doc = makeSignDoc([send([{ denom: 'uatom', amount: '1' }])], FEE, 'cosmoshub-4', 'm', 7, 3);
    const canonical = (value: object) => Buffer.from(serializeSignDoc(value as StdSignDoc)).toString('utf8');
    assert.notEqual(JSON.stringify(doc), canonical(doc));
    for (const text of [
      'hello',
      '[]',
      JSON.stringify(doc),
      `${signDoc([send([{ denom: 'uatom', amount: '1' }])])} `,
      canonical({ ...doc, extra: 1 }),
      signDoc([send([{ denom: 'uatom', amount: '1' }])]).replace(
        '"chain_id":"cosmoshub-4"',
        '"chain_id":"cosmoshub-4","chain_id":"cosmoshub-4"',
      ),
    ]) {
      assert.deepEqual(extractCosmosSignDocFacts(text, wallet), NO_CHAIN_FACTS, text);
    }
  });
});
