import type Database from 'better-sqlite3';
import { jsonNumber, jsonString } from '../chains/domain/json.ts';

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

/** A decision as the log answers it: its sequence number, and its request and trace parsed. */
export interface LoggedDecisionRow extends Omit<LoggedDecision, 'request' | 'trace'> {
  seq: number;
  request: unknown;
  trace: unknown;
}

/**
 * The longest span of decision times one batch may hold: a reader of [from, to) looks at batches that start from
 * `from` less this. The decision point starts another batch rather than stretch one further.
 */
export const DECISION_BATCH_MAX_SPAN_MS = 60_000;

/**
 * One decision as an entry of a batch (store/schema.ts `policy_decision_batches`): the row without its key, its
 * request and trace as JSON values (not strings), the spend reference only when it is not the reference, null fields
 * left out. A batch never holds a hold's decision: `holdId` must be null.
 */
export function decisionEntryJson(row: LoggedDecision): string {
  if (row.holdId !== null) throw new TypeError('a decision through a hold is logged in its own transaction');
  return `{"walletId":${jsonString(row.walletId)},"reference":${jsonString(row.reference)}${
    row.spendRef === row.reference ? '' : `,"spendRef":${jsonString(row.spendRef)}`
  },"action":${jsonString(row.action)},"effect":"${row.effect}"${row.reason === null ? '' : `,"reason":${jsonString(row.reason)}`}${
    row.policyId === null ? '' : `,"policyId":${jsonString(row.policyId)}`
  }${row.ruleId === null ? '' : `,"ruleId":${jsonString(row.ruleId)}`},"request":${row.request},"trace":${row.trace},"decidedAt":${jsonNumber(row.decidedAt)}}`;
}

/**
 * Decisions of one key answered without a write of their own, collected for one insert (`appendBatch`). Each entry is
 * written as UTF-8 into the batch's buffer as it is added: the text is made and copied while it is fresh, and nothing
 * of it is left on the JavaScript heap for the collector to copy and the driver to flatten and convert at the insert,
 * cold (docs/benchmarks.md, signing policies: the gate's CPU a message about halved, `--only message`).
 */
export class DecisionBatch {
  count = 0;
  firstAt = Number.POSITIVE_INFINITY;
  lastAt = Number.NEGATIVE_INFINITY;
  private bytes: Buffer;
  /** Bytes written, the opening bracket included. */
  private length = 1;

  /** `capacity`: the buffer's first size; it doubles as needed (an entry of a message is about 600 bytes). */
  constructor(
    readonly apiKeyId: string,
    capacity = 4096,
  ) {
    this.bytes = Buffer.allocUnsafe(Math.max(capacity, 2));
    this.bytes[0] = 0x5b; // [
  }

  /** Whether an entry decided at `at` would stretch the batch over DECISION_BATCH_MAX_SPAN_MS. */
  outspans(at: number): boolean {
    return this.count > 0 && Math.max(this.lastAt, at) - Math.min(this.firstAt, at) > DECISION_BATCH_MAX_SPAN_MS;
  }

  add(row: LoggedDecision): void {
    if (row.apiKeyId !== this.apiKeyId) throw new TypeError('a decision batch holds the decisions of one key');
    if (this.outspans(row.decidedAt)) {
      throw new RangeError(`a decision batch spans at most ${DECISION_BATCH_MAX_SPAN_MS} ms: start another`);
    }
    const entry = decisionEntryJson(row);
    // At most 3 bytes of UTF-8 a UTF-16 unit, a comma before it and the closing bracket after.
    const room = this.length + 1 + entry.length * 3 + 1;
    if (room > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(room, this.bytes.length * 2));
      this.bytes.copy(grown, 0, 0, this.length);
      this.bytes = grown;
    }
    if (this.count > 0) this.bytes[this.length++] = 0x2c; // ,
    this.length += this.bytes.write(entry, this.length, 'utf8');
    this.count += 1;
    if (row.decidedAt < this.firstAt) this.firstAt = row.decidedAt;
    if (row.decidedAt > this.lastAt) this.lastAt = row.decidedAt;
  }

  /** The entries as the JSON array stored (a view of the buffer). */
  json(): Buffer {
    this.bytes[this.length] = 0x5d; // ]
    return this.bytes.subarray(0, this.length + 1);
  }
}

/** An entry as `decisionEntryJson` wrote it, parsed. */
interface Entry {
  walletId: string;
  reference: string;
  spendRef?: string;
  action: string;
  effect: LoggedEffect;
  reason?: string;
  policyId?: string;
  ruleId?: string;
  request: unknown;
  trace: unknown;
  decidedAt: number;
}

const COLUMNS = `seq, api_key_id as apiKeyId, wallet_id as walletId, reference, spend_ref as spendRef, action, effect,
  reason, policy_id as policyId, rule_id as ruleId, hold_id as holdId, request, trace, decided_at as decidedAt`;

const byTimeThenSeq = (a: LoggedDecisionRow, b: LoggedDecisionRow) => a.decidedAt - b.decidedAt || a.seq - b.seq;

/**
 * The decision log of signing policies (shadow mode). Decisions taken inside a write are rows of `policy_decisions`,
 * written by the decision point in that transaction; decisions answered without one are queued and written in batches
 * (`appendBatch`). `between` reads both as one log.
 */
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
  // policy_decisions is AUTOINCREMENT: SQLite numbers its next row after the larger of sqlite_sequence's value and
  // its largest seq, and the table's value there may be set like any row's (sqlite.org/autoinc.html). A batch takes
  // its numbers by moving that value on, in the transaction that inserts it.
  const lastSeq = sqlite.prepare(`select seq from sqlite_sequence where name = 'policy_decisions'`).pluck();
  const setLastSeq = sqlite.prepare(`update sqlite_sequence set seq = ? where name = 'policy_decisions'`);
  const firstLastSeq = sqlite.prepare(`insert into sqlite_sequence (name, seq) values ('policy_decisions', ?)`);
  const insertBatch = sqlite.prepare(
    `insert into policy_decision_batches (api_key_id, first_seq, count, first_at, last_at, entries)
     values (?, ?, ?, ?, ?, ?)`,
  );
  const batchesFrom = sqlite.prepare(
    `select first_seq as firstSeq, first_at as firstAt, entries from policy_decision_batches
       where api_key_id = ? and first_at >= ? and first_at < ? order by first_at, id`,
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

    /**
     * Inside a writer transaction: logs a batch of decisions answered without a write (one insert for all, instead of
     * one row each: test/bench/policy-decide.ts http); answers the first entry's sequence number.
     */
    appendBatch(batch: DecisionBatch): number {
      if (batch.count === 0) throw new RangeError('a decision batch without entries');
      const last = lastSeq.get() as number | undefined;
      const first = (last ?? 0) + 1;
      if (last === undefined) firstLastSeq.run(first + batch.count - 1);
      else setLastSeq.run(first + batch.count - 1);
      insertBatch.run(batch.apiKeyId, first, batch.count, batch.firstAt, batch.lastAt, batch.json());
      return first;
    },

    /**
     * A key's decisions taken in [from, to), in the order taken (then by sequence number), after `afterSeq` (paging),
     * at most `limit`: rows and batch entries alike.
     */
    between(apiKeyId: string, from: number, to: number, limit: number, afterSeq = 0): LoggedDecisionRow[] {
      const rows = (between.all(apiKeyId, from, to, afterSeq, limit) as Array<LoggedDecision & { seq: number }>).map(
        (r): LoggedDecisionRow => ({ ...r, request: JSON.parse(r.request), trace: JSON.parse(r.trace) }),
      );
      // Batches in the order they start; once `limit` entries are held, a batch that starts after the last of them
      // (and every later one) cannot come before it.
      let entries: LoggedDecisionRow[] = [];
      for (const b of batchesFrom.iterate(apiKeyId, from - DECISION_BATCH_MAX_SPAN_MS, to) as Iterable<{
        firstSeq: number;
        firstAt: number;
        entries: Buffer;
      }>) {
        if (entries.length >= limit && b.firstAt > entries[limit - 1]!.decidedAt) break;
        (JSON.parse(b.entries.toString('utf8')) as Entry[]).forEach((e, i) => {
          const seq = b.firstSeq + i;
          if (e.decidedAt < from || e.decidedAt >= to || seq <= afterSeq) return;
          entries.push({
            seq,
            apiKeyId,
            walletId: e.walletId,
            reference: e.reference,
            spendRef: e.spendRef ?? e.reference,
            action: e.action,
            effect: e.effect,
            reason: e.reason ?? null,
            policyId: e.policyId ?? null,
            ruleId: e.ruleId ?? null,
            holdId: null,
            request: e.request,
            trace: e.trace,
            decidedAt: e.decidedAt,
          });
        });
        if (entries.length >= limit) entries = entries.sort(byTimeThenSeq).slice(0, limit);
      }
      if (entries.length === 0) return rows;
      return [...rows, ...entries].sort(byTimeThenSeq).slice(0, limit);
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
