/**
 * The short reason a library gave for refusing input, for a partner-facing message: viem's `shortMessage`
 * when there is one, else the first line of the error's message, else the thrown value as text, cut to 200
 * characters. Never throws, whatever was thrown.
 */
export function describeError(error: unknown): string {
  let reason: string;
  if (error instanceof Error) {
    const { shortMessage } = error as Error & { shortMessage?: unknown };
    reason = typeof shortMessage === 'string' ? shortMessage : error.message;
  } else {
    try {
      reason = String(error);
    } catch {
      reason = 'unknown error';
    }
  }
  return reason.split('\n')[0]!.slice(0, 200);
}
