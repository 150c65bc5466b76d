import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PolicyErrorCode } from '../../../chains/domain/policies.ts';
import { POLICY_LIMITS } from './policy-limits.ts';
import { type PolicyValidationError, validatePolicy } from './validate-policy.ts';

// biome-ignore lint/suspicious/noExplicitAny: policy documents under test are free-form JSON, edited in place
type Doc = Record<string, any>;

/** The example of POLICIES.md §1. */
function example(): Doc {
  return {
    name: 'payouts',
    layer: 'guardrail',
    scope: { walletType: 'EVM', networks: ['eip155:8453', 'eip155:1'] },
    rules: [
      {
        id: 'daily-cap',
        effect: 'deny',
        actions: ['transfer'],
        conditions: [{ spend: { asset: 'native', window: '24h' }, op: 'gt', value: '1000000000000000000' }],
      },
      {
        id: 'big',
        effect: 'require_approval',
        actions: ['transfer'],
        conditions: [{ fact: 'value', op: 'gte', value: '50000000000000000' }],
        approval: { stages: [{ role: 'approver', threshold: 2 }] },
      },
    ],
  };
}

/** A one-rule policy of `walletType` whose rule is `rule` (merged over a plain deny on transfers or sign_raw). */
function withRule(rule: Doc, walletType = 'EVM'): Doc {
  return {
    name: 'p',
    layer: 'guardrail',
    scope: { walletType },
    rules: [{ id: 'r', effect: 'deny', actions: [walletType === 'EVM' ? 'transfer' : 'sign_raw'], ...rule }],
  };
}

function withCondition(condition: unknown, walletType = 'EVM'): Doc {
  return withRule({ conditions: [condition] }, walletType);
}

function errorsOf(doc: unknown): PolicyValidationError[] {
  const result = validatePolicy(doc);
  if (result.valid) assert.fail('expected the document to be refused');
  return result.errors;
}

/** The document is refused with exactly one error, of this code at this path. */
function refuses(doc: unknown, code: PolicyErrorCode, path: string, message?: RegExp): void {
  const errors = errorsOf(doc);
  assert.deepEqual(
    errors.map((e) => [e.code, e.path]),
    [[code, path]],
    JSON.stringify(errors),
  );
  assert.ok(errors[0]!.message.length > 0);
  if (message) assert.match(errors[0]!.message, message);
}

function accepts(doc: unknown) {
  const result = validatePolicy(doc);
  assert.ok(result.valid, JSON.stringify(!result.valid && result.errors));
  return result.policy;
}

const C = '/rules/0/conditions/0';

describe('validatePolicy: valid documents', () => {
  it('accepts the example of POLICIES.md and returns it as written', () => {
    assert.deepEqual(accepts(example()), example());
  });

  it('returns a fresh copy: later changes to the input do not reach it', () => {
    const doc = example();
    const policy = accepts(doc);
    doc.rules[0].conditions[0].value = '1';
    doc.scope.networks.push('eip155:10');
    assert.equal((policy.rules[0]!.conditions![0] as { value: string }).value, '1000000000000000000');
    assert.deepEqual(policy.scope.networks, ['eip155:8453', 'eip155:1']);
  });

  it('accepts every combinator, operator, fact family and selector syntax', () => {
    accepts(
      withRule({
        conditions: [
          {
            all: [
              { fact: 'to', op: 'in', value: ['0xAbC0000000000000000000000000000000000001'] },
              {
                any: [
                  { fact: 'tx.selector', op: 'eq', value: '0xa9059cbb' },
                  { not: { fact: 'value', op: 'lt', value: '0' } },
                ],
              },
            ],
          },
          { fact: 'tx.chainId', op: 'not_in', value: ['1', '10'] },
          { fact: 'typedData.domain.name', op: 'ne', value: 'Permit2' },
          { spend: { asset: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', window: '90m' }, op: 'lte', value: '0' },
        ],
      }),
    );
    for (const [walletType, networks, asset] of [
      ['EVM', ['eip155:1', 'eip155:31337'], 'native'],
      ['SOLANA', ['solana:mainnet', 'solana:devnet'], 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'],
      ['STELLAR', ['stellar:pubnet', 'stellar:testnet'], `USDC:G${'A'.repeat(55)}`],
      [
        'COSMOS',
        ['cosmos:cosmoshub-4', 'cosmos:theta-testnet-001'],
        'ibc/27394FB092D2ECCD56123C74F36E4C1F926001CEADA9CA97EA622B25F41E5EB2',
      ],
      ['SUI', ['sui'], 'native'],
    ] as const) {
      accepts({
        name: walletType,
        layer: 'guardrail',
        scope: { walletType, networks, walletIds: ['2f1d0a8e-58a1-4c1e-9d7e-1c2b3a4d5e6f'] },
        rules: [
          {
            id: 'raw',
            effect: 'allow',
            actions: ['raw_signature'],
            conditions: [{ fact: 'wallet.id', op: 'eq', value: 'w' }],
          },
          {
            id: 'cap',
            effect: 'deny',
            actions: ['all'],
            conditions: [{ spend: { asset, window: '1d' }, op: 'gt', value: '10' }],
          },
          { id: 'hold', effect: 'require_approval', actions: ['all'] },
        ],
      });
    }
  });

  it('accepts a rule without conditions and one with an empty conditions array', () => {
    accepts(withRule({}));
    accepts(withRule({ conditions: [] }));
  });
});

describe('validatePolicy: the document and its layer', () => {
  for (const value of [null, [], 'policy', 5]) {
    it(`refuses ${JSON.stringify(value)} as a document`, () => {
      refuses(value, 'partner_policy_schema_invalid', '', /JSON object/);
    });
  }

  it('refuses a missing layer, another string and another type with layer_invalid', () => {
    const doc = example();
    delete doc.layer;
    refuses(doc, 'layer_invalid', '/layer', /required/);
    refuses({ ...example(), layer: 'Guardrail' }, 'layer_invalid', '/layer');
    refuses({ ...example(), layer: 1 }, 'layer_invalid', '/layer');
  });

  it('refuses delegation as unavailable, and only that, whatever else the document holds', () => {
    refuses({ layer: 'delegation', rules: 'nonsense' }, 'permissions_v2_extension_unavailable', '/layer', /end-user/);
  });

  it('refuses an unknown field, and names service fields as read-only', () => {
    refuses({ ...example(), extra: true }, 'policy_schema_field_unknown', '/extra');
    refuses({ ...example(), status: 'active' }, 'policy_schema_field_unknown', '/status', /set by the service/);
  });

  it('escapes ~ and / in paths (RFC 6901)', () => {
    refuses({ ...example(), 'a/b~c': 1 }, 'policy_schema_field_unknown', '/a~1b~0c');
  });

  it('refuses a missing, empty, long or malformed name', () => {
    const doc = example();
    delete doc.name;
    refuses(doc, 'partner_policy_schema_invalid', '/name', /required/);
    refuses({ ...example(), name: '' }, 'partner_policy_schema_invalid', '/name');
    refuses({ ...example(), name: 'x'.repeat(101) }, 'partner_policy_schema_invalid', '/name');
    refuses({ ...example(), name: 7 }, 'partner_policy_schema_invalid', '/name', /string/);
    refuses({ ...example(), name: 'a\uD800' }, 'partner_policy_schema_invalid', '/name', /surrogate/);
  });

  it('reports every error it finds, each with a path, up to the bound', () => {
    const errors = errorsOf({ layer: 'x', extra: 1, rules: [] });
    assert.deepEqual(
      errors.map((e) => [e.code, e.path]),
      [
        ['layer_invalid', '/layer'],
        ['policy_schema_field_unknown', '/extra'],
        ['partner_policy_schema_invalid', '/name'],
        ['partner_policy_schema_invalid', '/scope'],
        ['partner_policy_schema_invalid', '/rules'],
      ],
    );
    const many: Doc = example();
    for (let i = 0; i < 1000; i++) many[`x${i}`] = i;
    assert.equal(errorsOf(many).length, POLICY_LIMITS.errors);
  });
});

describe('validatePolicy: scope', () => {
  it('requires scope and scope.walletType, one of the wallet types', () => {
    const noScope = example();
    delete noScope.scope;
    refuses(noScope, 'partner_policy_schema_invalid', '/scope', /required/);
    refuses({ ...example(), scope: [] }, 'partner_policy_schema_invalid', '/scope');
    refuses({ ...example(), scope: {} }, 'partner_policy_schema_invalid', '/scope/walletType', /required/);
    refuses({ ...example(), scope: { walletType: 'BITCOIN' } }, 'partner_policy_schema_invalid', '/scope/walletType');
    refuses({ ...example(), scope: { walletType: 'EVM', chain: 1 } }, 'policy_schema_field_unknown', '/scope/chain');
  });

  it('checks walletIds: a non-empty array of distinct ids, at most 1000', () => {
    const scope = (walletIds: unknown) => ({ ...example(), scope: { walletType: 'EVM', walletIds } });
    refuses(scope('w1'), 'partner_policy_schema_invalid', '/scope/walletIds');
    refuses(scope([]), 'partner_policy_schema_invalid', '/scope/walletIds');
    refuses(
      scope(Array.from({ length: 1001 }, (_, i) => `w${i}`)),
      'partner_policy_schema_invalid',
      '/scope/walletIds',
    );
    refuses(scope(['w1', 3]), 'partner_policy_schema_invalid', '/scope/walletIds/1');
    refuses(scope(['w 1']), 'partner_policy_schema_invalid', '/scope/walletIds/0');
    refuses(scope(['w1', 'w1']), 'partner_policy_schema_invalid', '/scope/walletIds/1', /twice/);
  });

  it("checks networks in the wallet type's selector syntax, as a set", () => {
    const scope = (walletType: string) => withRule({ actions: ['all'] }, walletType);
    const cases: Array<[string, unknown, string]> = [
      ['EVM', [], '/scope/networks'],
      ['EVM', 'eip155:1', '/scope/networks'],
      ['EVM', ['solana:mainnet'], '/scope/networks/0'],
      ['EVM', ['eip155:0'], '/scope/networks/0'],
      ['EVM', ['eip155:01'], '/scope/networks/0'],
      ['EVM', ['eip155:1', 'eip155:1'], '/scope/networks/1'],
      ['SOLANA', ['solana:testnet'], '/scope/networks/0'],
      ['SOLANA', ['SOLANA'], '/scope/networks/0'],
      ['STELLAR', ['stellar:futurenet'], '/scope/networks/0'],
      ['COSMOS', ['cosmos:'], '/scope/networks/0'],
      ['COSMOS', ['cosmos:-hub'], '/scope/networks/0'],
      ['SUI', ['sui:mainnet'], '/scope/networks/0'],
    ];
    for (const [walletType, networks, path] of cases) {
      const doc = scope(walletType);
      doc.scope.networks = networks;
      refuses(doc, 'partner_policy_schema_invalid', path);
    }
  });
});

describe('validatePolicy: rules and actions', () => {
  it('requires 1 to 50 rules', () => {
    const doc = example();
    delete doc.rules;
    refuses(doc, 'partner_policy_schema_invalid', '/rules', /required/);
    refuses({ ...example(), rules: {} }, 'partner_policy_schema_invalid', '/rules');
    refuses({ ...example(), rules: [] }, 'partner_policy_schema_invalid', '/rules');
    const rules = Array.from({ length: 51 }, (_, i) => ({ id: `r${i}`, effect: 'deny', actions: ['all'] }));
    refuses({ ...example(), rules }, 'partner_policy_schema_invalid', '/rules');
  });

  it('checks each rule: an object, known fields, an id, unique, an effect', () => {
    refuses({ ...example(), rules: ['deny'] }, 'partner_policy_schema_invalid', '/rules/0');
    refuses(withRule({ why: 'x' }), 'policy_schema_field_unknown', '/rules/0/why');
    refuses(withRule({ id: undefined }), 'partner_policy_schema_invalid', '/rules/0/id', /required/);
    refuses(withRule({ id: '-r' }), 'partner_policy_schema_invalid', '/rules/0/id');
    refuses(withRule({ id: 'r'.repeat(65) }), 'partner_policy_schema_invalid', '/rules/0/id');
    const twice = example();
    twice.rules[1].id = 'daily-cap';
    refuses(twice, 'partner_policy_schema_invalid', '/rules/1/id', /earlier rule/);
    refuses(withRule({ effect: 'block' }), 'partner_policy_schema_invalid', '/rules/0/effect');
    refuses(withRule({ effect: undefined }), 'partner_policy_schema_invalid', '/rules/0/effect');
  });

  it('checks actions: known, distinct, possible for the wallet type; all alone and never on allow', () => {
    refuses(withRule({ actions: undefined }), 'partner_policy_schema_invalid', '/rules/0/actions', /required/);
    refuses(withRule({ actions: [] }), 'partner_policy_schema_invalid', '/rules/0/actions');
    refuses(withRule({ actions: 'transfer' }), 'partner_policy_schema_invalid', '/rules/0/actions');
    refuses(withRule({ actions: ['send'] }), 'partner_policy_schema_invalid', '/rules/0/actions/0');
    refuses(withRule({ actions: ['transfer', 'transfer'] }), 'partner_policy_schema_invalid', '/rules/0/actions/1');
    refuses(withRule({ actions: ['all', 'transfer'] }), 'partner_policy_schema_invalid', '/rules/0/actions');
    refuses(
      withRule({ effect: 'allow', actions: ['all'] }),
      'partner_policy_schema_invalid',
      '/rules/0/actions/0',
      /only on deny/,
    );
    refuses(
      withRule({ actions: ['sign_transaction'] }, 'COSMOS'),
      'partner_policy_schema_invalid',
      '/rules/0/actions/0',
      /never/,
    );
    refuses(withRule({ actions: ['transfer'] }, 'STELLAR'), 'partner_policy_schema_invalid', '/rules/0/actions/0');
    refuses(
      withRule({ actions: ['sign_typed_data'] }, 'SOLANA'),
      'partner_policy_schema_invalid',
      '/rules/0/actions/0',
    );
  });

  it('allows approval on require_approval only, as {stages: [{role, threshold}]}', () => {
    const stages = { stages: [{ role: 'approver', threshold: 1 }] };
    refuses(withRule({ approval: stages }), 'partner_policy_schema_invalid', '/rules/0/approval', /require_approval/);
    refuses(withRule({ effect: 'allow', approval: stages }), 'partner_policy_schema_invalid', '/rules/0/approval');
    const hold = (approval: unknown) => withRule({ effect: 'require_approval', approval });
    accepts(hold(stages));
    refuses(hold([]), 'partner_policy_schema_invalid', '/rules/0/approval');
    refuses(hold({}), 'partner_policy_schema_invalid', '/rules/0/approval/stages', /required/);
    refuses(hold({ ...stages, quorum: 1 }), 'policy_schema_field_unknown', '/rules/0/approval/quorum');
    refuses(hold({ stages: [] }), 'partner_policy_schema_invalid', '/rules/0/approval/stages');
    refuses(
      hold({ stages: Array(6).fill(stages.stages[0]) }),
      'partner_policy_schema_invalid',
      '/rules/0/approval/stages',
    );
    refuses(hold({ stages: ['approver'] }), 'partner_policy_schema_invalid', '/rules/0/approval/stages/0');
    refuses(
      hold({ stages: [{ role: 'a', threshold: 1, n: 1 }] }),
      'policy_schema_field_unknown',
      '/rules/0/approval/stages/0/n',
    );
    refuses(hold({ stages: [{ threshold: 1 }] }), 'partner_policy_schema_invalid', '/rules/0/approval/stages/0/role');
    for (const threshold of [0, 51, 1.5, '2', undefined]) {
      refuses(
        hold({ stages: [{ role: 'a', threshold }] }),
        'partner_policy_schema_invalid',
        '/rules/0/approval/stages/0/threshold',
      );
    }
  });
});

describe('validatePolicy: conditions', () => {
  it('requires an array of condition objects', () => {
    refuses(withRule({ conditions: { fact: 'to' } }), 'partner_policy_schema_invalid', '/rules/0/conditions');
    refuses(withCondition('to eq x'), 'partner_policy_schema_invalid', C, /object/);
    refuses(withCondition({}), 'partner_policy_schema_invalid', `${C}/fact`);
    refuses(withCondition({ op: 'eq', value: 'x' }), 'partner_policy_schema_invalid', `${C}/fact`);
    refuses(withCondition({ facts: 'to', op: 'eq', value: 'x' }), 'policy_schema_field_unknown', `${C}/facts`);
  });

  it('checks a leaf: a known fact, a known operator, no other field', () => {
    refuses(withCondition({ fact: 'recipient', op: 'eq', value: 'x' }), 'partner_policy_schema_invalid', `${C}/fact`);
    refuses(withCondition({ fact: 'to', op: 'equals', value: 'x' }), 'partner_policy_schema_invalid', `${C}/op`);
    refuses(withCondition({ fact: 'to', op: 'eq', value: 'x', note: 1 }), 'policy_schema_field_unknown', `${C}/note`);
  });

  it('checks operand types: strings for eq/ne, arrays for in/not_in, decimal strings for integers', () => {
    const leaf = (fact: string, op: string, value: unknown) => withCondition({ fact, op, value });
    const bad: Array<[string, string, unknown, string]> = [
      ['to', 'eq', ['0x1'], `${C}/value`],
      ['to', 'ne', '', `${C}/value`],
      ['to', 'eq', 'x'.repeat(257), `${C}/value`],
      ['to', 'eq', undefined, `${C}/value`],
      ['to', 'in', '0x1', `${C}/value`],
      ['to', 'in', [], `${C}/value`],
      ['to', 'not_in', ['a', 5], `${C}/value/1`],
      ['to', 'in', Array(1001).fill('a'), `${C}/value`],
      ['to', 'gt', '1', `${C}/op`],
      ['value', 'gt', 1, `${C}/value`],
      ['value', 'gt', '1.5', `${C}/value`],
      ['value', 'gt', '-1', `${C}/value`],
      ['value', 'gt', '01', `${C}/value`],
      ['value', 'gt', '1e18', `${C}/value`],
      ['value', 'gt', '', `${C}/value`],
      ['value', 'gt', (2n ** 256n).toString(), `${C}/value`],
      ['value', 'eq', '007', `${C}/value`],
      ['tx.chainId', 'in', ['1', 'one'], `${C}/value/1`],
    ];
    for (const [fact, op, value, path] of bad) refuses(leaf(fact, op, value), 'partner_policy_schema_invalid', path);
    accepts(leaf('value', 'lte', (2n ** 256n - 1n).toString()));
    accepts(leaf('value', 'eq', '0'));
  });

  it('checks all, any and not: one combinator per object, all/any non-empty, not a single condition', () => {
    const to = { fact: 'to', op: 'eq', value: 'x' };
    refuses(withCondition({ all: [] }), 'partner_policy_schema_invalid', `${C}/all`);
    refuses(withCondition({ any: to }), 'partner_policy_schema_invalid', `${C}/any`);
    refuses(withCondition({ not: [to] }), 'partner_policy_schema_invalid', `${C}/not`);
    refuses(withCondition({ all: [to], any: [to] }), 'policy_schema_field_unknown', `${C}/any`);
    refuses(withCondition({ not: to, fact: 'to' }), 'policy_schema_field_unknown', `${C}/fact`);
    refuses(
      withCondition({ all: [to, { any: [{ fact: 'to', op: 'in', value: 'x' }] }] }),
      'partner_policy_schema_invalid',
      `${C}/all/1/any/0/value`,
    );
  });

  it('checks spend leaves: {asset, window}, an integer operator, a decimal value', () => {
    const spend = (s: unknown, op = 'gt', value: unknown = '1', walletType = 'EVM') =>
      withCondition({ spend: s, op, value }, walletType);
    const ok = { asset: 'native', window: '24h' };
    for (const window of ['24', '0h', '24H', '1w', '367d', '527041m', '05h', 24]) {
      refuses(spend({ ...ok, window }), 'partner_policy_schema_invalid', `${C}/spend/window`);
    }
    accepts(spend({ ...ok, window: '366d' }));
    accepts(spend({ ...ok, window: '500ms' }));
    refuses(spend('native'), 'partner_policy_schema_invalid', `${C}/spend`);
    refuses(spend({ ...ok, chain: 1 }), 'policy_schema_field_unknown', `${C}/spend/chain`);
    refuses(spend({ window: '1h' }), 'partner_policy_schema_invalid', `${C}/spend/asset`, /required/);
    refuses(spend({ ...ok, asset: 'ETH' }), 'partner_policy_schema_invalid', `${C}/spend/asset`);
    refuses(spend({ ...ok, asset: 'USDC' }, 'gt', '1', 'STELLAR'), 'partner_policy_schema_invalid', `${C}/spend/asset`);
    refuses(
      spend({ ...ok, asset: '0x2::sui::SUI' }, 'gt', '1', 'SUI'),
      'partner_policy_schema_invalid',
      `${C}/spend/asset`,
      /native coin only/,
    );
    refuses(spend(ok, 'eq'), 'partner_policy_schema_invalid', `${C}/op`);
    refuses(spend(ok, 'gt', 5), 'partner_policy_schema_invalid', `${C}/value`);
    refuses(withCondition({ spend: ok, op: 'gt' }), 'partner_policy_schema_invalid', `${C}/value`, /required/);
    refuses(withCondition({ spend: ok, op: 'gt', value: '1', fact: 'to' }), 'policy_schema_field_unknown', `${C}/fact`);
  });

  it('refuses facts a rule can never have: raw_signature reads only wallet.*, and each type has its facts', () => {
    const raw = (condition: unknown) =>
      withRule({ effect: 'allow', actions: ['raw_signature'], conditions: [condition] }, 'SOLANA');
    accepts(raw({ fact: 'wallet.id', op: 'in', value: ['a', 'b'] }));
    accepts(raw({ fact: 'wallet.type', op: 'eq', value: 'SOLANA' }));
    refuses(raw({ fact: 'to', op: 'eq', value: 'x' }), 'fact_not_available', `${C}/fact`, /raw_signature/);
    refuses(raw({ fact: 'network', op: 'eq', value: 'solana:mainnet' }), 'fact_not_available', `${C}/fact`);
    refuses(
      raw({ spend: { asset: 'native', window: '1h' }, op: 'gt', value: '1' }),
      'fact_not_available',
      `${C}/spend`,
    );
    refuses(
      withRule({
        actions: ['sign_raw', 'raw_signature'],
        conditions: [{ not: { fact: 'value', op: 'gt', value: '1' } }],
      }),
      'fact_not_available',
      `${C}/not/fact`,
    );
    refuses(
      withCondition({ fact: 'tx.to', op: 'eq', value: 'x' }, 'SOLANA'),
      'fact_not_available',
      `${C}/fact`,
      /SOLANA/,
    );
    refuses(
      withCondition({ fact: 'authorization.chainId', op: 'eq', value: '0' }, 'SUI'),
      'fact_not_available',
      `${C}/fact`,
    );
  });

  it('bounds depth, conditions per rule and per policy, and list values per policy', () => {
    let deep: unknown = { fact: 'to', op: 'eq', value: 'x' };
    for (let i = 0; i < 8; i++) deep = { not: deep };
    refuses(withCondition(deep), 'partner_policy_schema_invalid', `${C}${'/not'.repeat(8)}`, /levels/);
    accepts(withCondition((deep as { not: unknown }).not));
    let hostile: unknown = { fact: 'to', op: 'eq', value: 'x' };
    for (let i = 0; i < 100_000; i++) hostile = { not: hostile };
    refuses(withCondition(hostile), 'partner_policy_schema_invalid', `${C}${'/not'.repeat(8)}`);

    const leaf = { fact: 'to', op: 'eq', value: 'x' };
    refuses(withRule({ conditions: Array(65).fill(leaf) }), 'partner_policy_schema_invalid', '/rules/0/conditions');
    refuses(
      withRule({ conditions: [{ any: Array(64).fill(leaf) }] }),
      'partner_policy_schema_invalid',
      '/rules/0/conditions/0/any/63',
      /at most 64 conditions/,
    );
    const rules = Array.from({ length: 9 }, (_, i) => ({
      id: `r${i}`,
      effect: 'deny',
      actions: ['all'],
      conditions: Array(60).fill(leaf),
    }));
    refuses({ ...withRule({}), rules }, 'partner_policy_schema_invalid', '/rules/8/conditions/32', /policy/);
    const list = Array(1000).fill('a');
    const listRules = Array.from({ length: 5 }, (_, i) => ({
      id: `r${i}`,
      effect: 'deny',
      actions: ['all'],
      conditions: [{ fact: 'to', op: 'in', value: list }],
    }));
    refuses({ ...withRule({}), rules: listRules }, 'partner_policy_schema_invalid', '/rules/4/conditions/0/value');
  });
});
