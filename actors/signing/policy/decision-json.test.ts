/**
 * The decision log's request and trace JSON is the text `JSON.stringify` writes, for generated requests and traces
 * whose strings hold anything UTF-16 can (quotes, backslashes, control characters, lone surrogates, astral characters).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { jsonNumber, jsonString } from '../../../chains/domain/json.ts';
import { FACT_NAMES, NO_CHAIN_FACTS, POLICY_ACTIONS } from '../../../chains/domain/policies.ts';
import { WALLET_TYPES } from '../../../chains/domain/wallets.ts';
import { policyRequestJson, traceJson } from './decision-json.ts';
import type { DecisionTrace, PolicyRequest } from './evaluate-policies.ts';

/** Any string of UTF-16 code units, lone surrogates included, or of the characters that need escaping. */
const text = fc.oneof(
  fc.string(),
  fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 12 }).map((units) => String.fromCharCode(...units)),
  fc
    .array(fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udfff', '😀', 'é', 'a'))
    .map((chars) => chars.join('')),
);
const number = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1_795_857_101_950, 1e21, 5e-7),
);

const chain = fc.oneof(
  fc.constant(NO_CHAIN_FACTS),
  fc.record({
    network: fc.option(text, { nil: null }),
    facts: fc.dictionary(fc.constantFrom(...FACT_NAMES), text),
    spend: fc.record({
      moved: fc.array(fc.record({ asset: text, amount: text }), { maxLength: 3 }),
      complete: fc.boolean(),
    }),
  }),
);

const request: fc.Arbitrary<PolicyRequest> = fc.record({
  wallet: fc.record({ id: text, type: fc.constantFrom(...WALLET_TYPES) }),
  action: fc.constantFrom(...POLICY_ACTIONS.filter((a) => a !== 'raw_signature')),
  rawSignature: fc.boolean(),
  chain,
  at: number,
}) as fc.Arbitrary<PolicyRequest>;

const trace: fc.Arbitrary<DecisionTrace> = fc.record({
  policies: fc.array(fc.record({ policyId: text, version: number }), { maxLength: 4 }),
  facts: fc.dictionary(fc.constantFrom(...FACT_NAMES), fc.option(text, { nil: null })),
  spend: fc.array(
    fc.record({
      policyId: text,
      ruleId: text,
      network: text,
      asset: text,
      window: text,
      windowStart: number,
      counted: text,
      amount: text,
    }),
    { maxLength: 2 },
  ),
}) as fc.Arbitrary<DecisionTrace>;

describe('decision log JSON', () => {
  it('jsonString and jsonNumber write what JSON.stringify writes', () => {
    fc.assert(
      fc.property(text, (s) => assert.equal(jsonString(s), JSON.stringify(s))),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(number, (n) => assert.equal(jsonNumber(n), JSON.stringify(n))),
      { numRuns: 2000 },
    );
  });

  it('a request is logged as JSON.stringify writes it, and reads back equal', () => {
    fc.assert(
      fc.property(request, (r) => {
        const written = policyRequestJson(r);
        assert.equal(written, JSON.stringify(r));
        assert.deepEqual(JSON.parse(written), JSON.parse(JSON.stringify(r)));
      }),
      { numRuns: 1000 },
    );
  });

  it('a trace is logged as JSON.stringify writes it, an undefined fact left out as it leaves it out', () => {
    fc.assert(
      fc.property(trace, (t) => assert.equal(traceJson(t), JSON.stringify(t))),
      { numRuns: 1000 },
    );
    const withUndefined = { policies: [], facts: { to: undefined, value: '1' }, spend: [] } as unknown as DecisionTrace;
    assert.equal(traceJson(withUndefined), '{"policies":[],"facts":{"value":"1"},"spend":[]}');
  });
});
