/**
 * The decision log's JSON of a request and of a trace (store/policy-decisions-repo.ts `request`, `trace`; read back by
 * simulate): the same text as `JSON.stringify`, written field by field. Every decision with permissions on logs both,
 * and `JSON.stringify` of the two took about 22,000 instructions a decision (callgrind, Node 20) against about 3,000
 * this way. decision-json.test.ts checks the text against `JSON.stringify` over generated values.
 */

import { jsonNumber, jsonString } from '../../../chains/domain/json.ts';
import { NO_CHAIN_FACTS } from '../../../chains/domain/policies.ts';
import type { DecisionTrace, PolicyRequest } from './evaluate-policies.ts';

/** The keys the serializers write: a key added to one of these types and not written here fails to compile. */
type Unwritten =
  | Exclude<keyof PolicyRequest, 'wallet' | 'action' | 'rawSignature' | 'chain' | 'at'>
  | Exclude<keyof PolicyRequest['wallet'], 'id' | 'type'>
  | Exclude<keyof DecisionTrace, 'policies' | 'facts' | 'spend'>
  | Exclude<keyof DecisionTrace['policies'][number], 'policyId' | 'version'>;
const everyKeyWritten: [Unwritten] extends [never] ? true : Unwritten = true;
void everyKeyWritten;

const NO_CHAIN_JSON = JSON.stringify(NO_CHAIN_FACTS);

/** `JSON.stringify(request)` for a request built as `{ wallet: { id, type }, action, rawSignature, chain, at }`. */
export function policyRequestJson(request: PolicyRequest): string {
  const { wallet, chain } = request;
  // A request that names no chain (messages, raw signatures) shares one frozen chain; others are written generically.
  const chainJson = chain === NO_CHAIN_FACTS ? NO_CHAIN_JSON : JSON.stringify(chain);
  // The wallet's type and the action are names of ours (WALLET_TYPES, RequestAction): nothing in them needs escaping.
  return `{"wallet":{"id":${jsonString(wallet.id)},"type":"${wallet.type}"},"action":"${request.action}","rawSignature":${request.rawSignature ? 'true' : 'false'},"chain":${chainJson},"at":${jsonNumber(request.at)}}`;
}

/** `JSON.stringify(trace)` for a trace as evaluatePolicies builds it. */
export function traceJson(trace: DecisionTrace): string {
  let policies = '';
  for (const p of trace.policies) {
    policies += `${policies === '' ? '' : ','}{"policyId":${jsonString(p.policyId)},"version":${jsonNumber(p.version)}}`;
  }
  let facts = '';
  const values = trace.facts as Record<string, unknown>;
  for (const name of Object.keys(values)) {
    const value = values[name];
    // As JSON.stringify: an undefined member is left out.
    if (value === undefined) continue;
    const text = typeof value === 'string' ? jsonString(value) : value === null ? 'null' : JSON.stringify(value);
    facts += `${facts === '' ? '' : ','}${jsonString(name)}:${text}`;
  }
  // Spend windows are read only by requests on a network with spend rules: written generically.
  const spend = trace.spend.length === 0 ? '[]' : JSON.stringify(trace.spend);
  return `{"policies":[${policies}],"facts":{${facts}},"spend":${spend}}`;
}
