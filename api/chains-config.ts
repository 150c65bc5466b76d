import fs from 'node:fs';
import { type TSchema, Type } from '@sinclair/typebox';
import { type ValueError, ValueErrorType } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import { chainsFileSections } from '../chains/chains-file-sections.ts';

const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' });

/** The `yield` section: protocol addresses that override the defaults of a chain id. */
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
  return { chains, problems };
}
