// WARC-Date values (ISO 8601 UTC, fraction kept) and their digits-only form, as the dedupe index, the
// capture history and WARC file names carry them.

/** "2026-01-02T03:04:05.678Z" -> "20260102030405678" (WARC-Date as digits, fraction kept). */
export function warcDateToDigits(warcDate: string): string {
  return warcDate.replace(/[-:TZ.]/g, "");
}

/** A moment as 17 digits, YYYYMMDDhhmmssSSS (UTC): WARC file names, state files, upload names. */
export function timestampDigits(date: Date): string {
  return warcDateToDigits(date.toISOString());
}

/** "20260102030405678" -> "2026-01-02T03:04:05.678Z": the exact inverse of warcDateToDigits. */
export function digitsToWarcDate(digits: string): string {
  const base = `${digits.slice(0, 4)}-${digits.slice(4, 6)}-${digits.slice(6, 8)}T${digits.slice(8, 10)}:${digits.slice(10, 12)}:${digits.slice(12, 14)}`;
  const fraction = digits.slice(14);
  return fraction ? `${base}.${fraction}Z` : `${base}Z`;
}
