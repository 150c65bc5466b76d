import type { LegacyEffect, StoredState } from '../host/types.ts';

/**
 * Reads a row the first actor host stored (version 1 of every machine): XState's own persisted snapshot,
 * `{status, value, historyValue, context, children}`. Its invoked promise children that were still active are
 * the effects that row had in flight; the host writes them as effect intents when it migrates the row.
 */
export function fromXStatePersistedSnapshot(stored: unknown): StoredState & { effects: LegacyEffect[] } {
  const s = stored as {
    value?: unknown;
    context?: unknown;
    children?: Record<string, { src?: unknown; snapshot?: { status?: unknown; input?: unknown } }>;
  };
  if (s === null || typeof s !== 'object' || s.value === undefined || typeof s.context !== 'object' || !s.context) {
    throw new Error('not an XState persisted snapshot (value and context expected)');
  }
  const effects: LegacyEffect[] = [];
  for (const [invokeId, child] of Object.entries(s.children ?? {})) {
    if (typeof child?.src === 'string' && child.snapshot?.status === 'active') {
      effects.push({ invokeId, src: child.src, input: child.snapshot.input });
    }
  }
  return {
    value: s.value as StoredState['value'],
    context: s.context as Record<string, unknown>,
    effects,
  };
}
