/**
 * The decision point's `PolicySource` over the policy store (store/policies-repo.ts). The store may not import the
 * engine's types (DESIGN §1), so it keeps its own structural view of a document; every document it holds passed
 * `validatePolicy` before it was written (api/services/policies.ts), which is what lets this view read them as engine
 * documents. No copy is made: the store's cached, frozen lists are handed over as they are, so evaluation pays a Map
 * lookup per request and the engine's compile cache (keyed by document object) holds until a policy changes.
 */
import type { PoliciesRepo } from '../../../store/policies-repo.ts';
import type { ActivePolicy } from './evaluate-policies.ts';
import type { PolicySource } from './policy-ports.ts';
import type { PolicyReader, StoredPolicy } from './policy-reader.ts';

/** The decision point's `PolicySource` over the policy store. */
export function policySourceOf(repo: Pick<PoliciesRepo, 'permissions' | 'activeGuardrails'>): PolicySource {
  return {
    permissions: (apiKeyId) => repo.permissions(apiKeyId),
    activeGuardrails: (apiKeyId) => repo.activeGuardrails(apiKeyId) as readonly ActivePolicy[] as ActivePolicy[],
  };
}

/** The usage and simulate routes' `PolicyReader` over the policy store: another key's policy reads as missing. */
export function policyReaderOf(repo: Pick<PoliciesRepo, 'recordAt'>): PolicyReader {
  const read = (apiKeyId: string, policyId: string, version?: number): StoredPolicy | undefined => {
    const r = repo.recordAt(policyId, version);
    if (!r || r.apiKeyId !== apiKeyId) return undefined;
    return { id: r.id, status: r.status, version: r.version, createdAt: r.createdAt, document: r.document as never };
  };
  return {
    policyAt: (apiKeyId, policyId) => read(apiKeyId, policyId),
    versionOf: (apiKeyId, policyId, version) => read(apiKeyId, policyId, version),
  };
}
