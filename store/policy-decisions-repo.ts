import type Database from 'better-sqlite3';

/** What the service answered for one decision with permissions on. */
export type LoggedEffect = 'allow' | 'deny' | 'hold' | 'forbidden';

/** One row of the decision log (store/schema.ts `policy_decisions`). */
export interface LoggedDecision {
  apiKeyId: string;
  walletId: string;
  reference: string;
  spendRef: string;
  action: string;
  effect: LoggedEffect;
  reason: string | null;
  policyId: string | null;
  ruleId: string | null;
  holdId: string | null;
  /** The request as the policy engine read it (JSON of a PolicyRequest). */
  request: string;
  /** What the decision rested on (JSON of a DecisionTrace). */
  trace: string;
  decidedAt: number;
}

export interface LoggedDecisionRow extends LoggedDecision {
  seq: number;
}

const COLUMNS = `seq, api_key_id as apiKeyId, wallet_id as walletId, reference, spend_ref as spendRef, action, effect,
  reason, policy_id as policyId, rule_id as ruleId, hold_id as holdId, request, trace, decided_at as decidedAt`;

/** The decision log of signing policies (shadow mode): written by the decision point in its transaction. */
export function createPolicyDecisionsRepo(sqlite: Database.Database) {
  const insert = sqlite.prepare(
    `insert into policy_decisions (api_key_id, wallet_id, reference, spend_ref, action, effect, reason, policy_id,
       rule_id, hold_id, request, trace, decided_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const between = sqlite.prepare(
    `select ${COLUMNS} from policy_decisions where api_key_id = ? and decided_at >= ? and decided_at < ? and seq > ?
       order by decided_at, seq limit ?`,
  );
  const approvedHold = sqlite.prepare(
    `select 1 from policy_decisions where api_key_id = ? and spend_ref = ? and effect = 'allow' and policy_id = ?
       and rule_id = ? and hold_id is not null limit 1`,
  );

  return {
    /** Inside a writer transaction: logs a decision; answers its sequence number. */
    append(row: LoggedDecision): number {
      // Bound by position: a row is written for every decision, and binding by name costs about as much again as the
      // insert itself (callgrind, 14k of 38k instructions a row).
      return Number(
        insert.run(
          row.apiKeyId,
          row.walletId,
          row.reference,
          row.spendRef,
          row.action,
          row.effect,
          row.reason,
          row.policyId,
          row.ruleId,
          row.holdId,
          row.request,
          row.trace,
          row.decidedAt,
        ).lastInsertRowid,
      );
    },

    /** A key's decisions taken in [from, to), in the order taken, after `afterSeq` (paging), at most `limit`. */
    between(apiKeyId: string, from: number, to: number, limit: number, afterSeq = 0): LoggedDecisionRow[] {
      return between.all(apiKeyId, from, to, afterSeq, limit) as LoggedDecisionRow[];
    },

    /**
     * Whether `spendRef` (a payment) was allowed through an approval of the rule `policyId`/`ruleId`: a replacement the
     * same rule holds is covered by that approval (the partner cannot resend an auto-retry's replacement).
     */
    approvedHold(apiKeyId: string, spendRef: string, policyId: string, ruleId: string): boolean {
      return approvedHold.get(apiKeyId, spendRef, policyId, ruleId) !== undefined;
    },
  };
}

export type PolicyDecisionsRepo = ReturnType<typeof createPolicyDecisionsRepo>;
