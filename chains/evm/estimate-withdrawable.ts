import type { YieldSnapshot } from './read-yield-position.ts';

/**
 * The spec's advisory `withdrawal.availableAmount`, from one position snapshot: the supplied balance, capped by what
 * the reserve can pay out now; 0 while the reserve is inactive or paused. Null when the account has debt, since
 * what it may withdraw then depends on its health factor across every reserve (the spec: "null when debt ...
 * prevents an estimate").
 */
export function estimateWithdrawable(snapshot: YieldSnapshot): bigint | null {
  if (snapshot.accountData.totalDebtBase > 0n) return null;
  const { active, paused } = snapshot.reserve.configuration;
  if (!active || paused) return 0n;
  const { suppliedBalance, availableLiquidity } = snapshot;
  if (availableLiquidity < suppliedBalance) return availableLiquidity;
  return suppliedBalance;
}
