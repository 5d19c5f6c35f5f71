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
  if (!/[a-z]/i.test(text)) return undefined; // a fraction or a sign: neither form
  const now = typeof nowEpochMs === 'function' ? nowEpochMs() : nowEpochMs;
  const at = httpDate(text, now);
  return at === undefined ? undefined : Math.max(0, at - now);
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY = '(?:mon|tue|wed|thu|fri|sat|sun)';
const LONG_DAY = '(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)';
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** `Sun, 06 Nov 1994 08:49:37 GMT` */
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`, 'i');
/** `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete) */
const RFC850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`, 'i');
/** `Sun Nov  6 08:49:37 1994` (obsolete; UTC though it says no zone) */
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`, 'i');

/**
 * An HTTP-date (RFC 9110 §5.6.7) in epoch ms: one of its three forms exactly, always UTC, or
 * undefined. (`Date.parse` reads "retry in 10" as a date in 2001, and asctime in local time.)
 */
export function httpDate(text: string, nowEpochMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m !== null) return utc(m[3]!, m[2]!, m[1]!, m[4]!, m[5]!, m[6]!);
  m = RFC850.exec(text);
  if (m !== null) {
    // A two-digit year more than 50 years ahead is the last past year with those digits.
    let year = 2000 + Number(m[3]);
    if (year > new Date(nowEpochMs).getUTCFullYear() + 50) year -= 100;
    return utc(String(year), m[2]!, m[1]!, m[4]!, m[5]!, m[6]!);
  }
  m = ASCTIME.exec(text);
  if (m !== null) return utc(m[6]!, m[1]!, m[2]!, m[3]!, m[4]!, m[5]!);
  return undefined;
}

function utc(year: string, month: string, day: string, h: string, min: string, sec: string) {
  const mon = MONTHS.indexOf(month.toLowerCase());
  const d = Number(day.trim());
  if (Number(h) > 23 || Number(min) > 59 || Number(sec) > 60) return undefined;
  const at = Date.UTC(Number(year), mon, d, Number(h), Number(min), Number(sec));
  // 31 Feb is not a date (Date.UTC would roll it into March).
  return new Date(at).getUTCDate() === d ? at : undefined;
}
