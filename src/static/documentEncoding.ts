// Which encoding a browser decodes an HTML document's bytes with, settled before the document is parsed.

/** The Encoding standard's names (what document.characterSet says), by the lower-case name TextDecoder gives. */
const ENCODING_NAMES = new Map(
  ["UTF-8", "IBM866", "ISO-8859-2", "ISO-8859-3", "ISO-8859-4", "ISO-8859-5", "ISO-8859-6", "ISO-8859-7", "ISO-8859-8", "ISO-8859-8-I", "ISO-8859-10",
    "ISO-8859-13", "ISO-8859-14", "ISO-8859-15", "ISO-8859-16", "KOI8-R", "KOI8-U", "macintosh", "windows-874", "windows-1250", "windows-1251",
    "windows-1252", "windows-1253", "windows-1254", "windows-1255", "windows-1256", "windows-1257", "windows-1258", "x-mac-cyrillic", "GBK",
    "gb18030", "Big5", "EUC-JP", "ISO-2022-JP", "Shift_JIS", "EUC-KR", "UTF-16BE", "UTF-16LE"].map((name) => [name.toLowerCase(), name]),
);

/** A label TextDecoder knows, as the HTML standard takes it from a document: a UTF-16 label in a meta tag means UTF-8. */
function knownEncoding(label: string | undefined, fromMeta: boolean): { label: string; name: string } | null {
  if (!label) return null;
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(label.trim());
  } catch {
    return null;
  }
  let name = decoder.encoding;
  if (fromMeta && name.startsWith("utf-16")) name = "utf-8";
  return { label: name, name: ENCODING_NAMES.get(name) ?? name };
}

/**
 * The document's encoding as a browser settles it: a byte order mark, else the Content-Type's charset, else a
 * `<meta charset>` or `<meta http-equiv=Content-Type>` in the first 1024 bytes, else UTF-8. (Chromium's last resort
 * is its encoding detector, which this does not run.)
 */
export function documentEncoding(bytes: Uint8Array, contentType: string | undefined): { label: string; name: string } {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { label: "utf-8", name: "UTF-8" };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { label: "utf-16be", name: "UTF-16BE" };
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { label: "utf-16le", name: "UTF-16LE" };
  const declared = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1];
  const fromHeader = knownEncoding(declared, false);
  if (fromHeader) return fromHeader;
  return knownEncoding(metaCharset(bytes), true) ?? { label: "utf-8", name: "UTF-8" };
}

/** The charset a `<meta>` in the first 1024 bytes declares (the HTML standard's prescan, simplified), comments skipped. */
function metaCharset(bytes: Uint8Array): string | undefined {
  const head = Buffer.from(bytes.subarray(0, 1024)).toString("latin1").replace(/<!--[\s\S]*?(?:-->|$)/g, "");
  for (const [tag] of head.matchAll(/<meta[\t\n\f\r /][^>]*>/gi)) {
    const charset = /[\t\n\f\r /"';]charset\s*=\s*["']?([^"'\t\n\f\r ;/>]+)/i.exec(tag)?.[1];
    if (charset) return charset;
  }
  return undefined;
}
