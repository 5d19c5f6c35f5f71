/**
 * `Retry-After` (RFC 9110 §10.2.3): either delay-seconds (a non-negative integer) or an HTTP-date.
 * Returns the advised wait in ms, or undefined when the value is absent or malformed.
 * `nowEpochMs` is the wall clock, needed only for the date form (passed in: no clock read here).
 *
 * @example
 * parseRetryAfter('120', 0); // 120_000
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('Wed, 21 Oct 2015 07:27:00 GMT')); // 60_000
 */
export function parseRetryAfter(
  value: string | string[] | undefined,
  nowEpochMs: number | (() => number),
): number | undefined {
  if (Array.isArray(value)) value = value[0];
  if (value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Only the date form is left; reject anything that is not an HTTP-date-like string (a bare
  // number with a fraction or a sign is not a valid delay-seconds either).
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  const now = typeof nowEpochMs === 'function' ? nowEpochMs() : nowEpochMs;
  return Math.max(0, at - now);
}
