import { describe, expect, it } from "vitest";
import { documentEncoding } from "../../../src/static/documentEncoding.js";

const bytes = (text: string) => new Uint8Array(Buffer.from(text, "latin1"));

describe("documentEncoding", () => {
  it("takes a byte order mark, then the Content-Type's charset, then a <meta> in the first 1024 bytes, else UTF-8", () => {
    expect(documentEncoding(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]), "text/html; charset=iso-8859-2")).toEqual({ label: "utf-8", name: "UTF-8" });
    expect(documentEncoding(bytes(`<meta charset="utf-8">`), "text/html; charset=ISO-8859-2")).toEqual({ label: "iso-8859-2", name: "ISO-8859-2" });
    // latin1 is windows-1252 to a browser.
    expect(documentEncoding(bytes(`<meta charset=latin1>`), "text/html")).toEqual({ label: "windows-1252", name: "windows-1252" });
    expect(documentEncoding(bytes(`<meta http-equiv="Content-Type" content="text/html;charset=Shift_JIS">`), undefined)).toEqual({ label: "shift_jis", name: "Shift_JIS" });
    // An unknown charset is no charset; a commented-out meta is none; a meta past 1024 bytes is not seen.
    expect(documentEncoding(bytes(`<!-- <meta charset="koi8-r"> --><p>`), "text/html; charset=bogus")).toEqual({ label: "utf-8", name: "UTF-8" });
    expect(documentEncoding(bytes(`${" ".repeat(1100)}<meta charset="koi8-r">`), "text/html")).toEqual({ label: "utf-8", name: "UTF-8" });
    // A UTF-16 label in a meta means UTF-8 (the bytes are ASCII-compatible, or the meta could not have been read).
    expect(documentEncoding(bytes(`<meta charset="utf-16le">`), "text/html")).toEqual({ label: "utf-8", name: "UTF-8" });
  });
});
