/**
 * A small tmpfs volume for disk-full tests (the tests run as root). Fill it
 * to ENOSPC, free it again, unmount at the end.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export interface Volume {
  dir: string;
  /** Empties the WAL of `dbFile` (if given), then writes a filler file until the volume is full. */
  fill(dbFile?: string): void;
  /** Deletes the filler file. */
  free(): void;
  close(): void;
}

export function mountVolume(sizeMb = 3): Volume {
  const dir = mkdtempSync(join(tmpdir(), 'sak-vol-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir]);
  } catch (cause) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error('disk-full tests need root to mount a tmpfs (mount -t tmpfs)', { cause });
  }
  const filler = join(dir, 'filler');
  return {
    dir,
    fill(dbFile) {
      if (dbFile) {
        const side = new Database(dbFile);
        side.pragma('wal_checkpoint(TRUNCATE)');
        side.close();
      }
      const fd = openSync(filler, 'a');
      try {
        for (const size of [64 * 1024, 4096, 512, 1]) {
          try {
            for (;;) writeSync(fd, Buffer.alloc(size));
          } catch (err) {
            if ((err as { code?: string }).code !== 'ENOSPC') throw err;
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    close() {
      execFileSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
