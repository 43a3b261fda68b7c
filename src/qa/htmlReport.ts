import { worstFirst, type QaPageResult, type QaSummary } from "./pageResult.js";

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Thumbnails: the 1366x900 screenshots shown this size (their place is kept while they load lazily). */
const THUMB_WIDTH = 240;
const THUMB_HEIGHT = Math.round((THUMB_WIDTH * 900) / 1366);
const percent = (score: number | null): string => (score === null ? "–" : `${(score * 100).toFixed(1)}%`);

function image(file: string | null, alt: string, cls: string): string {
  return file ? `<a href="${escapeHtml(encodeURIComponent(file))}"><img class="${cls}" src="${escapeHtml(encodeURIComponent(file))}" alt="${escapeHtml(alt)}" width="${THUMB_WIDTH}" height="${THUMB_HEIGHT}" loading="lazy"></a>` : `<span class="${cls} none">no ${escapeHtml(alt)}</span>`;
}

function row(result: QaPageResult, threshold: number): string {
  const { scores } = result;
  const missing = result.missing.length
    ? `<ul class="missing">${result.missing.map((url) => `<li>${escapeHtml(url)}</li>`).join("")}</ul>`
    : `<span class="none">none</span>`;
  return `<tr class="${scores.overall < threshold ? "below" : "ok"}" data-url="${escapeHtml(result.url)}">
<td class="page"><a href="${escapeHtml(encodeURIComponent(result.file))}.json">${escapeHtml(result.title || result.url)}</a><div class="url">${escapeHtml(result.url)}</div>${result.replayed ? "" : `<div class="error">not replayed</div>`}</td>
<td class="overall">${percent(scores.overall)}</td>
<td class="screenshot">${percent(scores.screenshot)}</td>
<td class="text">${percent(scores.text)}</td>
<td class="resources">${percent(scores.resources)}</td>
<td class="thumbs">${image(result.images.live, "crawl screenshot", "live")}${image(result.images.replay, "replay screenshot", "replay")}</td>
<td class="missing-cell">${missing}</td>
</tr>`;
}

/** qa/index.html: one row per page, worst first; thumbnails and per-page files are next to it in qa/. */
export function htmlReport(summary: QaSummary, results: readonly QaPageResult[]): string {
  const rows = worstFirst(results).map((r) => row(r, summary.threshold)).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>QA report: ${escapeHtml(summary.source)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: .4em .6em; text-align: left; vertical-align: top; }
td.overall, td.screenshot, td.text, td.resources { text-align: right; white-space: nowrap; }
tr.below td.overall { color: #b00; font-weight: bold; }
.url { color: #666; font-size: 12px; word-break: break-all; }
.thumbs { white-space: nowrap; }
.thumbs img { border: 1px solid #ccc; margin-right: 4px; }
.missing { margin: 0; padding-left: 1.2em; font-size: 12px; word-break: break-all; }
.none { color: #888; }
.error { color: #b00; }
</style></head>
<body>
<h1>QA report</h1>
<p class="summary">${summary.pages} pages replayed from <code>${escapeHtml(summary.source)}</code> in ${summary.seconds.toFixed(1)} s
(${summary.secondsPerPage.toFixed(2)} s a page); <span class="below-count">${summary.below.length}</span> below ${percent(summary.threshold)}.</p>
<table>
<thead><tr><th>Page</th><th>Score</th><th>Screenshot</th><th>Text</th><th>Resources</th><th>Crawl | replay</th><th>Missing in replay</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</body></html>
`;
}
