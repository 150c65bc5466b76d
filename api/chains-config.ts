import fs from 'node:fs';
import { type TSchema, Type } from '@sinclair/typebox';
import { type ValueError, ValueErrorType } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import { chainsFileSections } from '../chains/chains-file-sections.ts';
import { YIELD_CHAIN_IDS } from '../chains/domain/yield.ts';
import { checksumEvmAddress } from '../chains/evm/checksum-address.ts';

const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' });

/**
 * The `yield` section: protocol addresses that override the defaults of a chain id (chains/evm/
 * resolve-lending-market.ts), each on one of the yield chains and on a chain of the `evm` section.
 */
const YieldEntry = Type.Object(
  { chainId: Type.Integer({ minimum: 1 }), pool: Address, usdc: Address },
  { additionalProperties: false },
);

/**
 * The operator's `CHAINS_FILE`: which chains the service talks to, and where. Chains absent are refused. Each payment
 * family has its section (`evm`, `solana`: the entry schema is its adapter's), beside `yield`.
 */
export const ChainsFileSchema = Type.Object(
  {
    ...Object.fromEntries(
      Object.values(chainsFileSections).map((c) => [c.section, Type.Optional(Type.Array(c.entry))]),
    ),
    yield: Type.Optional(Type.Array(YieldEntry)),
  },
  { additionalProperties: false },
);

/** A checked chains file: each section's entries, as the family (or `yield`) schema accepted them. */
export type ChainsFile = Readonly<Record<string, ReadonlyArray<Record<string, unknown>> | undefined>>;

/** The values a union of literals allows, or undefined for another schema. */
function literals(schema: TSchema): string[] | undefined {
  const anyOf = (schema as { anyOf?: TSchema[] }).anyOf;
  if (!anyOf?.every((s) => 'const' in s)) return undefined;
  return anyOf.map((s) => String((s as unknown as { const: unknown }).const));
}

/** The known field closest to a misspelt one (at most two edits away), if any. */
function closest(name: string, known: string[]): string | undefined {
  const distance = (a: string, b: string): number => {
    const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
    for (let j = 1; j <= b.length; j++) d[0]![j] = j;
    for (let i = 1; i <= a.length; i++) {
      for (let j = 1; j <= b.length; j++) {
        const cost = a[i - 1] === b[j - 1] ? 0 : 1;
        d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      }
    }
    return d[a.length]![b.length]!;
  };
  return known.find((k) => distance(name.toLowerCase(), k.toLowerCase()) <= 2);
}

/**
 * The schema's complaints in an operator's words, one per problem: a missing field is reported once (not also as a
 * wrong value), an enum names its allowed values, and an unknown field names the known one it is closest to.
 */
function describeProblems(errors: ValueError[]): string[] {
  const missing = new Set(errors.filter((e) => e.type === ValueErrorType.ObjectRequiredProperty).map((e) => e.path));
  const out: string[] = [];
  for (const e of errors) {
    const where = e.path || '/';
    if (e.type === ValueErrorType.ObjectRequiredProperty) {
      const allowed = literals(e.schema);
      out.push(`${where} is required${allowed ? ` (one of: ${allowed.join(' | ')})` : ''}`);
    } else if (missing.has(e.path)) {
      // The same absent value, judged again by the field's own schema: said once above.
    } else if (e.type === ValueErrorType.ObjectAdditionalProperties) {
      // The error's schema is the object's, whose properties are the known fields.
      const field = e.path.split('/').pop() ?? '';
      const guess = closest(field, Object.keys((e.schema as { properties?: object }).properties ?? {}));
      out.push(`${where} is not a known field${guess ? ` (did you mean ${guess}?)` : ''}`);
    } else {
      const allowed = literals(e.schema);
      out.push(allowed ? `${where} must be one of: ${allowed.join(' | ')}` : `${where} ${e.message}`);
    }
  }
  return [...new Set(out)];
}

/** Reads and checks the chains file; returns problems (each naming where) instead of throwing. */
export function readChainsFile(file: string): { chains: ChainsFile; problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    return { chains: {}, problems: [`CHAINS_FILE ${file}: ${(err as Error).message}`] };
  }
  const problems = describeProblems([...Value.Errors(ChainsFileSchema, raw)])
    .slice(0, 10)
    .map((p) => `CHAINS_FILE ${file}: ${p}`);
  if (problems.length > 0) return { chains: {}, problems };
  const chains = raw as ChainsFile;
  const dup = (xs: string[]) => xs.filter((x, i) => xs.indexOf(x) !== i);
  for (const { section, read } of Object.values(chainsFileSections)) {
    for (const ref of dup((chains[section] ?? []).map((entry) => read(entry).chainRef))) {
      problems.push(`CHAINS_FILE ${file}: ${section} chain ${ref} is listed twice`);
    }
  }
  problems.push(...yieldProblems(chains).map((p) => `CHAINS_FILE ${file}: ${p}`));
  return { chains, problems };
}

/** What is wrong with the `yield` entries beyond their schema, one problem each. */
function yieldProblems(chains: ChainsFile): string[] {
  const out: string[] = [];
  const entries = (chains['yield'] ?? []) as { chainId: number; pool: string; usdc: string }[];
  const evmChains = new Set((chains[chainsFileSections.EVM.section] ?? []).map((e) => e['chainId']));
  const seen = new Set<number>();
  entries.forEach((entry, i) => {
    if (!(YIELD_CHAIN_IDS as readonly number[]).includes(entry.chainId)) {
      out.push(`/yield/${i}/chainId ${entry.chainId} is not a yield chain (one of: ${YIELD_CHAIN_IDS.join(' | ')})`);
    } else if (!evmChains.has(entry.chainId)) {
      out.push(`yield chain ${entry.chainId} has no evm entry: add one with its rpcUrl`);
    }
    if (seen.has(entry.chainId)) out.push(`yield chain ${entry.chainId} is listed twice`);
    seen.add(entry.chainId);
    for (const field of ['pool', 'usdc'] as const) {
      const hex = entry[field].slice(2);
      const mixed = hex !== hex.toLowerCase() && hex !== hex.toUpperCase();
      if (mixed && checksumEvmAddress(entry[field]) !== entry[field]) {
        out.push(`/yield/${i}/${field} has an invalid EIP-55 checksum (its mixed case does not match its hex)`);
      }
    }
    if (entry.pool.toLowerCase() === entry.usdc.toLowerCase()) {
      out.push(`/yield/${i}: pool and usdc are the same address`);
    }
  });
  return out;
}
