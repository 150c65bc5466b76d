import fs from 'node:fs';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { CHAIN_ENVIRONMENTS, SOLANA_NETWORKS } from '../chains/domain/payments.ts';

const RpcUrl = Type.String({ pattern: '^https?://[^\\s]+$' });
const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' });
const Environment = Type.Union(CHAIN_ENVIRONMENTS.map((e) => Type.Literal(e)));

/** The operator's `CHAINS_FILE`: which chains the service talks to, and where. Chains absent are refused. */
export const ChainsFileSchema = Type.Object(
  {
    evm: Type.Optional(
      Type.Array(
        Type.Object(
          {
            chainId: Type.Integer({ minimum: 1 }),
            rpcUrl: RpcUrl,
            environment: Environment,
          },
          { additionalProperties: false },
        ),
      ),
    ),
    solana: Type.Optional(
      Type.Array(
        Type.Object(
          {
            network: Type.Union(SOLANA_NETWORKS.map((n) => Type.Literal(n))),
            rpcUrl: RpcUrl,
            /** Default: `any` for SOLANA_DEVNET (the beta network), `production` for SOLANA. */
            environment: Type.Optional(Environment),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    yield: Type.Optional(
      Type.Array(
        Type.Object(
          { chainId: Type.Integer({ minimum: 1 }), pool: Address, usdc: Address },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);

export type ChainsFile = Static<typeof ChainsFileSchema>;

/** Reads and checks the chains file; returns problems (each naming where) instead of throwing. */
export function readChainsFile(file: string): { chains: ChainsFile; problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    return { chains: {}, problems: [`CHAINS_FILE ${file}: ${(err as Error).message}`] };
  }
  const problems = [...Value.Errors(ChainsFileSchema, raw)]
    .slice(0, 10)
    .map((e) => `CHAINS_FILE ${file}: ${e.path || '/'} ${e.message}`);
  if (problems.length > 0) return { chains: {}, problems };
  const chains = raw as ChainsFile;
  const dup = (xs: Array<string | number>) => xs.filter((x, i) => xs.indexOf(x) !== i);
  for (const id of dup((chains.evm ?? []).map((c) => c.chainId)))
    problems.push(`CHAINS_FILE ${file}: evm chainId ${id} is listed twice`);
  for (const n of dup((chains.solana ?? []).map((c) => c.network)))
    problems.push(`CHAINS_FILE ${file}: solana network ${n} is listed twice`);
  return { chains, problems };
}
