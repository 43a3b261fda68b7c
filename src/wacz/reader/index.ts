// The one WACZ reader, used by the indexer and by QA: a zip reader over byte sources (local files, HTTP range
// requests) and the CDXJ index reader (plain and ZipNum). CDXJ lines are parsed by src/wacz/cdxjLine.ts.
export { relationRequiresOf } from "./dataPackage.js";
export { openWacz, WaczReadError, DEFAULT_MAX_ENTRY_BYTES, type WaczReader, type EntryRange, type OpenWaczOptions } from "./zipReader.js";
export { iterWaczCdxj, iterWaczCdxjRecordBatches, WaczIndexError, type CdxjRecord } from "./cdxjReader.js";
