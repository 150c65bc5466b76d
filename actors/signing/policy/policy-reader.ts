/**
 * How the usage and simulate routes read stored policies (the policy store, store/policies-repo.ts, implements it):
 * a key's policy as it stands, and any version of it as it was. Another key's policy is absent, as a missing one.
 */
import type { PolicyStatus } from '../../../chains/domain/policies.ts';
import type { PolicyDocument } from './policy-document.ts';

export interface StoredPolicy {
  id: string;
  status: PolicyStatus;
  version: number;
  /** ms since the epoch (evaluation visits the oldest first). */
  createdAt: number;
  document: PolicyDocument;
}

export interface PolicyReader {
  /** The key's policy `policyId` at its current version, whatever its status; undefined: missing or another key's. */
  policyAt(apiKeyId: string, policyId: string): StoredPolicy | undefined;
  /** The key's policy `policyId` at `version` (content is immutable per version); undefined when it has none. */
  versionOf(apiKeyId: string, policyId: string, version: number): StoredPolicy | undefined;
}

/** No policy store: every policy is missing (until store/policies-repo.ts is wired). */
export const noStoredPolicies: PolicyReader = {
  policyAt: () => undefined,
  versionOf: () => undefined,
};
