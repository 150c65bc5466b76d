/**
 * Whether `value` is a plain object such as `JSON.parse` produces (prototype `Object.prototype` or `null`),
 * so arrays, byte arrays, class instances and `null` are refused where a JSON object is expected.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
