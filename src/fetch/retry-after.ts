/**
 * A `Retry-After` value (delay-seconds or an HTTP-date, RFC 9110 §10.2.3) in milliseconds from `now`, at most
 * `max`; `undefined` when there is none or it cannot be read, so that the caller's own backoff applies.
 */
export function parseRetryAfter(
  value: string | null,
  max: number,
  now: number = Date.now(),
): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    // Date.parse reads bare numbers ("-1") as years; an HTTP-date always names its day and month.
    const date = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(date)) return undefined;
    ms = Math.max(0, date - now);
  }
  return Math.min(ms, max);
}
