// Public API of the WACZ packaging module.
export { writeWacz, type WaczInput, type WaczResult } from "./writeWacz.js";
export {
  indexWarcFiles,
  iterCdxjLines,
  sortCdxjLines,
  parseCdxjLine,
  DEFAULT_MAX_REQUEST_BODY_BYTES,
  type CdxjIndexOptions,
  type CdxjLine,
} from "./cdxj.js";
export { sortLinesExternally, DEFAULT_SORT_RUN_BYTES, type SortedLines } from "./externalSort.js";
export {
  writeCdxIndexes,
  writeZipNumIndex,
  writePlainCdxj,
  zipNumIdxLine,
  cdxjByteSize,
  shouldUseZipNum,
  DEFAULT_ZIPNUM_THRESHOLD_BYTES,
  ZIPNUM_LINES_PER_BLOCK,
  ZIPNUM_CDX_FILENAME,
  ZIPNUM_IDX_FILENAME,
  ZIPNUM_META_LINE,
  PLAIN_CDXJ_FILENAME,
  type ZipNumBlock,
  type IndexEntry,
  type WriteCdxIndexesOptions,
} from "./zipnum.js";
export {
  buildDataPackage,
  buildDataPackageDigest,
  serializeDataPackage,
  serializeDataPackageDigest,
  makeResource,
  sha256Hex,
  WACZ_VERSION,
  DATAPACKAGE_PATH,
  DATAPACKAGE_DIGEST_PATH,
  type DataPackage,
  type DataPackageResource,
  type DataPackageDigest,
  type DataPackageOptions,
  type RelationRequirement,
} from "./datapackage.js";
export {
  inspectPagesFile,
  PAGES_HEADER_LINE,
  EXTRA_PAGES_HEADER_LINE,
  type PagesFileInfo,
  type FirstPage,
} from "./pages.js";
export {
  writeStoredZip,
  type ZipFileEntry,
  type ZipBufferEntry,
  type StoredEntryInfo,
  type StoredZipResult,
} from "./storedZip.js";
export {
  openWacz,
  WaczReadError,
  DEFAULT_MAX_ENTRY_BYTES,
  type WaczReader,
  type EntryRange,
  type OpenWaczOptions,
} from "./zipReader.js";
export {
  iterWaczCdxj,
  iterWaczCdxjRecordBatches,
  parseCdxjLine as parseCdxjRecord,
  WaczIndexError,
  type CdxjRecord,
} from "./cdxjReader.js";
