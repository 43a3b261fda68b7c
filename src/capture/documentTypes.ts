/** Content types the browser renders as a document whose links and subresources we want. */
const RENDERED_DOCUMENT_TYPES = new Set([
  "text/html",
  "application/xhtml+xml",
  "image/svg+xml",
  "text/xml",
  "application/xml",
  // Feeds: Chromium shows them (RSS and Atom as text); their items are read from what it shows (page/formFeedLinks.ts).
  "application/rss+xml",
  "application/atom+xml",
  "application/feed+json",
]);

export function isRenderedDocumentType(mime: string): boolean {
  return RENDERED_DOCUMENT_TYPES.has(mime.toLowerCase());
}
