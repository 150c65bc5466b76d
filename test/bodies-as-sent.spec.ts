import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verifyMessage } from 'viem';
import { EIP712_MAIL } from '../fixtures/eip712-mail.ts';
import { envelopeProblems, type RawResponse, rawRequest } from './helpers/bad-input-http.ts';
import { startTestService, type TestService, type WalletBody } from './helpers/service.ts';

let svc: TestService;
let secret: string;
let evm: WalletBody;
let solana: WalletBody;

before(async () => {
  svc = await startTestService();
  ({ secret } = await svc.newPartner());
  const create = async (type: string) => {
    const r = await svc.v1(secret, 'POST', '/wallets', {
      type,
      userIdentifier: `bodies-${type}`,
      userIdentifierType: 'CUSTOM_ID',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body as WalletBody;
  };
  evm = await create('EVM');
  solana = await create('SOLANA');
});
after(async () => {
  await svc.stop();
});

const send = (method: string, path: string, body: Buffer | string, contentType = 'application/json') =>
  rawRequest(svc.url, {
    method,
    path,
    headers: { 'x-api-key': secret, 'content-type': contentType, 'x-request-id': 'bodies-as-sent-1' },
    body,
  });

/** A refusal in the envelope, with the exact status, code and message. */
function assertRefused(res: RawResponse, status: number, code: string, message: string | RegExp): void {
  assert.deepEqual(envelopeProblems(res, { status, code, requestId: 'bodies-as-sent-1' }), []);
  const body = res.body as { message: string };
  if (typeof message === 'string') assert.equal(body.message, message);
  else assert.match(body.message, message);
}

const bytes = (...parts: Array<string | number[]>) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

describe('a JSON body that is not UTF-8 is refused, never signed as replacement characters', () => {
  for (const [name, body, offset, byte] of [
    ['a 0xff byte', bytes('{"message":"pay ', [0xff], ' now"}'), 16, 'ff'],
    ['Latin-1 "café"', Buffer.from('{"message":"café"}', 'latin1'), 15, 'e9'],
    ['an encoded surrogate (CESU-8)', bytes('{"message":"', [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80], '"}'), 12, 'ed'],
    ['an overlong "/"', bytes('{"message":"a', [0xc0, 0xaf], '"}'), 13, 'c0'],
    ['a character cut short at the end', bytes('{"message":"x"}', [0xf0, 0x9f]), 15, 'f0'],
  ] as const) {
    test(`sign-message with ${name}: 400 INVALID_JSON naming the byte and its offset`, async () => {
      for (const wallet of [evm, solana]) {
        const res = await send('POST', `/v1/wallets/${wallet.id}/sign-message`, body);
        assertRefused(
          res,
          400,
          'INVALID_JSON',
          `body is not valid UTF-8: byte 0x${byte} at offset ${offset} does not start a UTF-8 character`,
        );
      }
    });
  }

  test('the same route signs exactly the UTF-8 text sent, multi-byte characters included (viem verifies)', async () => {
    const message = 'pay café ☃ 😀 now';
    const res = await send('POST', `/v1/wallets/${evm.id}/sign-message`, Buffer.from(JSON.stringify({ message })));
    assert.equal(res.status, 200, res.text);
    const signature = `0x${(res.body as { signature: string }).signature}` as const;
    const address = evm.address as `0x${string}`;
    assert.equal(await verifyMessage({ address, message, signature }), true);
    assert.equal(await verifyMessage({ address, message: message.replace('é', '\ufffd'), signature }), false);
  });

  test('a charset other than UTF-8 is a 415 naming it; charset=utf-8 is accepted', async () => {
    const body = Buffer.from('{"message":"café"}', 'latin1');
    const res = await send('POST', `/v1/wallets/${evm.id}/sign-message`, body, 'application/json; charset=ISO-8859-1');
    assertRefused(
      res,
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      /^charset=iso-8859-1 is not accepted: send the JSON body encoded as UTF-8/,
    );
    const ok = await send(
      'POST',
      `/v1/wallets/${evm.id}/sign-message`,
      '{"message":"café"}',
      'application/json; charset=UTF-8',
    );
    assert.equal(ok.status, 200, ok.text);
  });

  test('broken JSON says what the parser saw', async () => {
    const res = await send('POST', `/v1/wallets/${evm.id}/sign-message`, '{"message":"x"');
    assertRefused(res, 400, 'INVALID_JSON', /^body is not valid JSON: .*position 14/);
  });
});

describe('prototype keys are refused as what they are, with where they are', () => {
  const why = 'is not accepted: "__proto__" and "constructor.prototype" keys could change object prototypes';
  for (const [name, method, path, body, where] of [
    [
      'a top-level __proto__ in a wallet creation',
      'POST',
      '/v1/wallets',
      '{"type":"EVM","userIdentifier":"proto","userIdentifierType":"CUSTOM_ID","__proto__":{"isAdmin":true}}',
      'body.__proto__',
    ],
    [
      'a __proto__ deep in EIP-712 typed data',
      'POST',
      'SIGN_TYPED',
      JSON.stringify({ typedData: EIP712_MAIL }).replace('"contents":', '"__proto__":{"x":1},"contents":'),
      'body.typedData.message.__proto__',
    ],
    [
      'a __proto__ spelled with \\u escapes',
      'PATCH',
      'PATCH_EVM',
      '{"userIdentifier":"x","\\u005f\\u005fproto\\u005f\\u005f":{}}',
      'body.__proto__',
    ],
    [
      'constructor.prototype in a wallet update',
      'PATCH',
      'PATCH_EVM',
      '{"userIdentifier":"x","constructor":{"prototype":{"polluted":true}}}',
      'body.constructor.prototype',
    ],
  ] as const) {
    test(`${name}: 400 INVALID_REQUEST naming ${where}`, async () => {
      const url =
        path === 'SIGN_TYPED'
          ? `/v1/wallets/${evm.id}/sign-typed-data`
          : path === 'PATCH_EVM'
            ? `/v1/wallets/${evm.id}`
            : path;
      const res = await send(method, url, body);
      assertRefused(res, 400, 'INVALID_REQUEST', `${where} ${why}`);
      assert.equal((res.body as { field: string }).field, where);
    });
  }

  test('the words as values are signed like any other text', async () => {
    const res = await send(
      'POST',
      `/v1/wallets/${evm.id}/sign-message`,
      '{"message":"__proto__ constructor prototype"}',
    );
    assert.equal(res.status, 200, res.text);
  });
});
