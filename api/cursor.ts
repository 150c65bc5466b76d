import { ServiceError } from '../chains/domain/errors.ts';

/**
 * List cursors: opaque to partners, base64url of `<kind>:<position>`. The kind (one letter per list) keeps a cursor
 * of one list from being taken by another.
 */
export function encodeCursor(kind: string, position: number): string {
  return Buffer.from(`${kind}:${position}`).toString('base64url');
}

/** The position a cursor of `kind` carries; 400 INVALID_CURSOR for anything this service did not issue. */
export function decodeCursor(kind: string, cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const m = /^([a-z]):(\d{1,15})$/.exec(text);
  if (!m || m[1] !== kind) throw new ServiceError('INVALID_CURSOR', 400, 'cursor is not one this service returned');
  return Number(m[2]);
}
