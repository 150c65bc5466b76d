/**
 * Names the JSON-ish type of a value for an error message: `null`, `array`, `bytes` (a Uint8Array) or the
 * `typeof` name (`undefined`, `number`, `string`, `object`, …).
 */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Uint8Array) return 'bytes';
  return typeof value;
}
