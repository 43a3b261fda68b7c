/**
 * W3C/ISO dates as sitemaps use them (<lastmod>) and as --sitemapFromDate/--sitemapToDate take them:
 * "2024", "2024-03", "2024-03-05", "2024-03-05T12:00", "2024-03-05T12:00:00.000+02:00". A time without
 * a zone is taken as UTC, so the same input means the same instant on every machine.
 */
const W3C_DATE = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

/** The period a date names: its first and last millisecond (a whole day for "2024-03-05"). */
export interface DatePeriod {
  start: Date;
  end: Date;
}

export function parseW3cDate(text: string): DatePeriod | null {
  const m = W3C_DATE.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const year = Number(y);
  const month = mo ? Number(mo) - 1 : 0;
  const day = d ? Number(d) : 1;
  if (month > 11 || day < 1 || day > 31) return null;
  if (h === undefined) {
    const start = Date.UTC(year, month, day);
    const next = d ? Date.UTC(year, month, day + 1) : mo ? Date.UTC(year, month + 1, 1) : Date.UTC(year + 1, 0, 1);
    if (new Date(start).getUTCDate() !== day) return null;
    return { start: new Date(start), end: new Date(next - 1) };
  }
  const ms = frac ? Number(frac.slice(0, 3).padEnd(3, "0")) : 0;
  const local = Date.UTC(year, month, day, Number(h), Number(mi), s ? Number(s) : 0, ms);
  if (Number(h) > 23 || Number(mi) > 59 || (s !== undefined && Number(s) > 59) || new Date(local).getUTCDate() !== day) return null;
  let offsetMin = 0;
  if (zone && zone !== "Z") offsetMin = (zone.startsWith("-") ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  const instant = new Date(local - offsetMin * 60_000);
  // A time given to the second (or minute) names that instant; there is no finer period to cover.
  return { start: instant, end: instant };
}
