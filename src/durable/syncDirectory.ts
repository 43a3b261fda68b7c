import { open } from "node:fs/promises";

/**
 * fsync a folder: the names created (or removed) in it so far survive a host crash. An fsync of a new file
 * makes its bytes durable, not its name in the folder (POSIX; ext4 happens to commit both), so a file whose
 * records count as written must have its folder synced once after it was created.
 */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
