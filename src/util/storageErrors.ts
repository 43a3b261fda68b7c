/** File-system errors after which nothing more can be written: the crawl stops instead of losing data. */
const STORAGE_CODES: Record<string, string> = {
  ENOSPC: "no space left on the device",
  EDQUOT: "disk quota exceeded",
  EFBIG: "file larger than the system allows",
  EROFS: "the file system is read-only",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EIO: "input/output error",
};

export function isStorageError(err: unknown): boolean {
  return typeof (err as NodeJS.ErrnoException)?.code === "string" && (err as NodeJS.ErrnoException).code! in STORAGE_CODES;
}

/** The device or the quota is full (browsertrix-crawler's exit code 3), as opposed to a folder that cannot be written. */
export function isOutOfSpace(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

export function storageErrorMessage(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code && code in STORAGE_CODES) return `${STORAGE_CODES[code]} (${code})`;
  return err instanceof Error ? err.message : String(err);
}
