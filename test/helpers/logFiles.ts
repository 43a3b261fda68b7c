import { openLogFile, type LogFile, type OpenLogFile } from "../../src/durable/appendLog.js";

/**
 * Real files opened for append logs (durable/appendLog.ts), some of whose calls a test replaces: `overrides` gets
 * the real file (and its path) and returns the calls to use instead (a write that comes up short, a sync that
 * fails or is held).
 */
export function filesWith(overrides: (file: LogFile, path: string) => Partial<LogFile>): OpenLogFile {
  return async (path, flags) => {
    const file = await openLogFile(path, flags);
    const real: LogFile = {
      write: (buffer, offset, length, position) => file.write(buffer, offset, length, position),
      read: (buffer, offset, length, position) => file.read(buffer, offset, length, position),
      datasync: () => file.datasync(),
      truncate: (length) => file.truncate(length),
      stat: () => file.stat(),
      close: () => file.close(),
    };
    return { ...real, ...overrides(real, path) };
  };
}

/** An error as the kernel reports it (EIO from a failed fsync, ENOSPC from a full disk). */
export function fsError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}
