// Public API of the WACZ writer (the reader, used by the indexer and QA, is ./reader/).
export { writeWacz, type WaczInput, type WaczResult } from "./writeWacz.js";
export {
  indexWarcFiles,
  iterCdxjLines,
  sortCdxjLines,
  DEFAULT_MAX_REQUEST_BODY_BYTES,
  type CdxjIndexOptions,
} from "./cdxj.js";
export { parseCdxjLine, cdxjLineParts, WaczIndexError, type CdxjRecord } from "./cdxjLine.js";
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
  sha256OfFile,
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
