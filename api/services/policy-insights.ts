/**
 * What a partner can see of a policy at work (POLICIES.md §3, §4): its spend meters on a wallet (`usage`), and what a
 * policy would have done to the requests the decision point logged (`simulate`, shadow mode). Reads only: the policy
 * store through PolicyReader, the spend ledger, the decision log.
 */
import {
  type ActivePolicy,
  evaluatePolicies,
  type PolicyDecision,
  type PolicyRequest,
  type SpendKey,
} from '../../actors/signing/policy/evaluate-policies.ts';
import type { Condition, PolicyDocument } from '../../actors/signing/policy/policy-document.ts';
import type { PolicyReader, StoredPolicy } from '../../actors/signing/policy/policy-reader.ts';
import { invalidRequest, ServiceError, walletNotFound } from '../../chains/domain/errors.ts';
import { MAX_SPEND_WINDOW_MS, NETWORK_SELECTORS, spendWindowMs } from '../../chains/domain/policies.ts';
import type { Store } from '../../store/index.ts';
import type { LoggedDecisionRow } from '../../store/policy-decisions-repo.ts';
import type { WalletRow } from '../../store/wallets-repo.ts';
import type { Principal } from '../plugins/auth.ts';

/** What these reads need of the caller: its key and project. */
type Caller = Pick<Principal, 'keyId' | 'projectId'>;

export interface Meter {
  ruleId: string;
  asset: string;
  window: string;
  /** The spend leaf's `value` (base units). */
  limit: string;
  /** What the window has counted so far (base units). */
  used: string;
  /** When the current window ends (ISO 8601): windows are aligned to the Unix epoch. */
  resetsAt: string;
}

/** One logged request whose outcome the simulated policies decide otherwise, or which they refuse. */
export interface SimulationItem {
  decisionId: number;
  decidedAt: string;
  walletId: string;
  action: string;
  /** What the service answered then. */
  actual: { effect: string; reason?: string; policyId?: string; ruleId?: string };
  /** What it would answer with the policy as it stands now beside the versions then active. */
  simulated: { effect: 'allow' | 'deny' | 'hold'; reason?: string; policyId?: string; ruleId?: string; fact?: string };
}

export interface SimulationResult {
  evaluated: number;
  wouldDeny: number;
  wouldRequireApproval: number;
  /** Requests whose outcome would differ from the one they got. */
  changed: number;
  /** More requests were logged in the span than one simulation evaluates: `evaluated` stops at the limit. */
  truncated: boolean;
  items: SimulationItem[];
}

/** Most logged requests one simulation replays, and most items it lists. */
export const SIMULATE_MAX_DECISIONS = 10_000;
export const SIMULATE_MAX_ITEMS = 1_000;
/** Longest span a simulation covers. */
export const SIMULATE_MAX_SPAN_MS = 31 * 86_400_000;

const policyNotFound = () => new ServiceError('POLICY_NOT_FOUND', 404, 'policy not found');

/** Every spend leaf of a rule's conditions, however deep. */
function spendLeaves(conditions: readonly Condition[] | undefined, out: Array<Extract<Condition, { spend: unknown }>>) {
  for (const c of conditions ?? []) {
    if ('spend' in c) out.push(c);
    else if ('all' in c) spendLeaves(c.all, out);
    else if ('any' in c) spendLeaves(c.any, out);
    else if ('not' in c) spendLeaves([c.not], out);
  }
  return out;
}

/**
 * A spend ledger replayed in memory (simulate): per (wallet, network, asset), amounts in time order with running sums,
 * so a window's total is two binary searches; each reference counts once per (network, asset).
 */
class ReplayedLedger {
  private readonly series = new Map<string, { at: number[]; sums: bigint[] }>();
  private readonly counted = new Map<string, { at: number; amount: bigint }>();

  add(walletId: string, network: string, asset: string, ref: string, at: number, amount: bigint): void {
    if (amount <= 0n) return;
    const own = `${ref}\u0000${network}\u0000${asset}`;
    if (this.counted.has(own)) return;
    this.counted.set(own, { at, amount });
    const key = `${walletId}\u0000${network}\u0000${asset}`;
    let s = this.series.get(key);
    if (!s) {
      s = { at: [], sums: [] };
      this.series.set(key, s);
    }
    // Appended in time order (the ledger before the span, then the span's decisions as taken).
    s.at.push(at);
    s.sums.push((s.sums.at(-1) ?? 0n) + amount);
  }

  total(walletId: string, network: string, asset: string, start: number, end: number, ref: string): bigint {
    const s = this.series.get(`${walletId}\u0000${network}\u0000${asset}`);
    let total = 0n;
    if (s) {
      const upTo = (t: number) => {
        let lo = 0;
        let hi = s.at.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (s.at[mid]! < t) lo = mid + 1;
          else hi = mid;
        }
        return lo === 0 ? 0n : s.sums[lo - 1]!;
      };
      total = upTo(end) - upTo(start);
    }
    const own = this.counted.get(`${ref}\u0000${network}\u0000${asset}`);
    if (own && own.at >= start && own.at < end) total -= own.amount;
    return total > 0n ? total : 0n;
  }
}

function movedOf(request: PolicyRequest): Array<{ asset: string; amount: bigint }> {
  const evm = request.wallet.type === 'EVM';
  const out: Array<{ asset: string; amount: bigint }> = [];
  for (const m of request.chain.spend.moved) {
    if (typeof m.amount === 'string' && /^[0-9]{1,80}$/.test(m.amount)) {
      out.push({ asset: evm ? m.asset.toLowerCase() : m.asset, amount: BigInt(m.amount) });
    }
  }
  return out;
}

function simulatedOf(d: PolicyDecision): SimulationItem['simulated'] {
  if (d.effect === 'allow') return { effect: 'allow' };
  if (d.effect === 'hold') return { effect: 'hold', policyId: d.policyId, ruleId: d.ruleId };
  return {
    effect: 'deny',
    reason: d.reason,
    ...('policyId' in d ? { policyId: d.policyId } : {}),
    ...('ruleId' in d ? { ruleId: d.ruleId } : {}),
    ...('fact' in d && d.fact !== undefined ? { fact: d.fact } : {}),
  };
}

export function createPolicyInsights(deps: {
  store: Pick<Store, 'wallets' | 'spend' | 'policyDecisions'>;
  policies: PolicyReader;
  now?: () => number;
}) {
  const { store, policies } = deps;
  const now = deps.now ?? Date.now;

  function policyOf(principal: Caller, policyId: string): StoredPolicy {
    const policy = policies.policyAt(principal.keyId, policyId);
    if (!policy) throw policyNotFound();
    return policy;
  }

  function meters(principal: Caller, wallet: WalletRow, policy: StoredPolicy, network: string | undefined) {
    const doc: PolicyDocument = policy.document;
    const selectors = doc.scope.networks;
    const chosen = network ?? (selectors?.length === 1 ? selectors[0] : undefined);
    if (chosen === undefined) {
      throw invalidRequest(
        'network is required: the policy does not name exactly one network (e.g. ?network=eip155:1)',
        { field: 'query.network' },
      );
    }
    const syntax = NETWORK_SELECTORS[doc.scope.walletType];
    if (!syntax.pattern.test(chosen)) {
      throw invalidRequest(`network must be a ${doc.scope.walletType} network such as ${syntax.example}`, {
        field: 'query.network',
      });
    }
    const at = now();
    const evm = doc.scope.walletType === 'EVM';
    const out: Meter[] = [];
    for (const rule of doc.rules) {
      for (const leaf of spendLeaves(rule.conditions, [])) {
        const windowMs = spendWindowMs(leaf.spend.window)!;
        const windowStart = Math.floor(at / windowMs) * windowMs;
        const asset = evm ? leaf.spend.asset.toLowerCase() : leaf.spend.asset;
        const used = store.spend.windowTotal(
          { apiKeyId: principal.keyId, walletId: wallet.id, network: chosen, asset, windowMs, windowStart },
          { materialize: false },
        );
        out.push({
          ruleId: rule.id,
          asset: leaf.spend.asset,
          window: leaf.spend.window,
          limit: leaf.value,
          used: used.toString(),
          resetsAt: new Date(windowStart + windowMs).toISOString(),
        });
      }
    }
    return { meters: out };
  }

  return {
    /** `GET /v1/permissions-v2/wallets/{walletId}/policies/{policyId}/usage`. */
    usage(principal: Caller, walletId: string, policyId: string, network?: string): { meters: Meter[] } {
      const wallet = store.wallets.get(principal.projectId, walletId);
      if (!wallet) throw walletNotFound();
      return meters(principal, wallet, policyOf(principal, policyId), network);
    },

    /** `GET /v1/permissions-v2/users/{userId}/policies/{policyId}/usage?walletId`: a wallet claimed by that user. */
    userUsage(principal: Caller, userId: string, policyId: string, walletId: string, network?: string) {
      const wallet = store.wallets.get(principal.projectId, walletId);
      // A wallet of another user, or not claimed, is as absent as a missing one.
      if (!wallet || wallet.claimedByUserId !== userId) throw walletNotFound();
      return meters(principal, wallet, policyOf(principal, policyId), network);
    },

    /**
     * `POST /v1/permissions-v2/policies/{id}/simulate`: replays the key's logged requests of [from, to) in the order they
     * were decided against the policy as it stands (a draft, or the next version of an active one) beside the versions
     * of the other policies that were active then, with spend windows recomputed from the ledger before the span and
     * the simulated outcomes within it.
     */
    simulate(principal: Caller, policyId: string, span: { from: string; to: string }): SimulationResult {
      const from = Date.parse(span.from);
      const to = Date.parse(span.to);
      if (!(from < to)) throw invalidRequest('from must be before to', { field: 'body.from' });
      if (to - from > SIMULATE_MAX_SPAN_MS) {
        throw invalidRequest(`a simulation covers at most ${SIMULATE_MAX_SPAN_MS / 86_400_000} days`, {
          field: 'body.to',
        });
      }
      const draft = policyOf(principal, policyId);
      const keyId = principal.keyId;
      const rows: LoggedDecisionRow[] = store.policyDecisions.between(keyId, from, to, SIMULATE_MAX_DECISIONS + 1);
      const truncated = rows.length > SIMULATE_MAX_DECISIONS;
      if (truncated) rows.length = SIMULATE_MAX_DECISIONS;

      // What windows reaching into the span had counted before it (entries released before the span do not count).
      const ledger = new ReplayedLedger();
      for (const e of store.spend.entriesBetween(keyId, from - MAX_SPEND_WINDOW_MS, from)) {
        if (e.releasedAt !== null && e.releasedAt <= from) continue;
        ledger.add(e.walletId, e.network, e.asset, e.spendRef, e.countedAt, BigInt(e.amount));
      }

      const draftPolicy: ActivePolicy = {
        id: draft.id,
        version: draft.version,
        createdAt: draft.createdAt,
        document: draft.document,
      };
      const versions = new Map<string, ActivePolicy | null>();
      const versionOf = (id: string, version: number): ActivePolicy | null => {
        const k = `${id}\u0000${version}`;
        let p = versions.get(k);
        if (p === undefined) {
          const stored = policies.versionOf(keyId, id, version);
          p = stored ? { id, version, createdAt: stored.createdAt, document: stored.document } : null;
          versions.set(k, p);
        }
        return p;
      };

      const result: SimulationResult = {
        evaluated: 0,
        wouldDeny: 0,
        wouldRequireApproval: 0,
        changed: 0,
        truncated,
        items: [],
      };
      for (const row of rows) {
        const request = row.request as PolicyRequest;
        const trace = row.trace as { policies: Array<{ policyId: string; version: number }> };
        // The policies that matched then (the only ones that could decide it), the simulated one in place of its own.
        const set: ActivePolicy[] = [draftPolicy];
        for (const p of trace.policies) {
          if (p.policyId === draft.id) continue;
          const then = versionOf(p.policyId, p.version);
          if (then) set.push(then);
        }
        const lookup = (k: SpendKey) => {
          const windowMs = spendWindowMs(k.window)!;
          return ledger.total(row.walletId, k.network, k.asset, k.windowStart, k.windowStart + windowMs, row.spendRef);
        };
        const decision = evaluatePolicies(set, request, lookup);
        const simulated = simulatedOf(decision);
        result.evaluated += 1;
        if (simulated.effect === 'deny') result.wouldDeny += 1;
        if (simulated.effect === 'hold') result.wouldRequireApproval += 1;
        // Spend as the simulated policies would have let it happen (a hold that was approved then counts).
        const network = request.chain.network;
        const spent = simulated.effect === 'allow' || (simulated.effect === 'hold' && row.effect === 'allow');
        if (spent && typeof network === 'string' && network !== '*') {
          for (const m of movedOf(request)) {
            ledger.add(row.walletId, network, m.asset, row.spendRef, row.decidedAt, m.amount);
          }
        }
        const actualEffect = row.effect === 'forbidden' ? 'hold' : row.effect;
        const changed = actualEffect !== simulated.effect;
        if (changed) result.changed += 1;
        if ((changed || simulated.effect !== 'allow') && result.items.length < SIMULATE_MAX_ITEMS) {
          result.items.push({
            decisionId: row.seq,
            decidedAt: new Date(row.decidedAt).toISOString(),
            walletId: row.walletId,
            action: row.action,
            actual: {
              effect: row.effect,
              ...(row.reason !== null ? { reason: row.reason } : {}),
              ...(row.policyId !== null ? { policyId: row.policyId } : {}),
              ...(row.ruleId !== null ? { ruleId: row.ruleId } : {}),
            },
            simulated,
          });
        }
      }
      return result;
    },
  };
}

export type PolicyInsights = ReturnType<typeof createPolicyInsights>;
