/**
 * The SQLite WAL bounded by the room its volume has. SQLite checkpoints the
 * WAL every 1,000 pages (~4 MB) and never shrinks the file on its own: on a
 * volume with less room the WAL grows until the disk is full, and, once space
 * is freed, grows back into it, so writes kept failing with SQLITE_FULL until
 * a restart (closing the last connection empties the WAL). Here:
 * - `journal_size_limit` gives the room back after a checkpoint resets a WAL
 *   that grew past one auto-checkpoint's worth;
 * - on opening, the auto-checkpoint interval is lowered to a quarter of the
 *   volume's free space when that is less than the default's 4 MB;
 * - after a write failed on a full disk, the WAL is checkpointed and truncated
 *   before the next statement, until that succeeds (space is back), and the
 *   interval is lowered to half the WAL that filled the disk.
 */
// A namespace import: a runtime whose node:fs lacks statfsSync must still load this file.
import * as fs from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { StorageError } from '../errors/index.js';
import type { SqliteConnection } from './sqlite-drivers.js';

/**
 * The most a SQLite WAL file keeps of its size once a checkpoint has reset it
 * (`journal_size_limit`): about one auto-checkpoint's worth (1,000 pages).
 */
export const SQLITE_JOURNAL_SIZE_LIMIT = 4 * 1024 * 1024;

/** The lowest auto-checkpoint interval, in pages (a checkpoint every 64 KB of 4 KB pages). */
const MIN_WAL_AUTOCHECKPOINT = 16;

/** Each WAL frame is one page and a 24-byte header. */
const WAL_FRAME_HEADER = 24;

function pragmaValue(sqlite: SqliteConnection, name: string): number {
  const [row] = sqlite.pragma(name) as Array<Record<string, unknown>>;
  return Number(row ? Object.values(row)[0] : Number.NaN);
}

/** Sets the connection's WAL bounds: the size limit, and an interval the volume has room for. */
export function boundWal(sqlite: SqliteConnection, filename: string): void {
  sqlite.pragma(`journal_size_limit = ${SQLITE_JOURNAL_SIZE_LIMIT}`);
  if (filename === ':memory:') return;
  let free: number;
  try {
    const volume = fs.statfsSync(dirname(filename));
    free = volume.bavail * volume.bsize;
  } catch {
    // A runtime without statfs, or a path it cannot stat: the full-disk relief still applies.
    return;
  }
  const frame = pragmaValue(sqlite, 'page_size') + WAL_FRAME_HEADER;
  const interval = pragmaValue(sqlite, 'wal_autocheckpoint');
  const fits = Math.max(MIN_WAL_AUTOCHECKPOINT, Math.floor(free / 4 / frame));
  if (fits < interval) sqlite.pragma(`wal_autocheckpoint = ${fits}`);
}

export interface FullDiskRelief {
  /** Before a statement or transaction, holding the lock outside any transaction. */
  beforeWork(): void;
  /** Notes a failure; a full disk empties the WAL before the next statement. Returns `err`. */
  failed<E>(err: E): E;
}

/** What one SQLite connection does after a write found the disk full (see the file's comment). */
export function createFullDiskRelief(
  sqlite: SqliteConnection,
  filename: string,
  logger: Logger | undefined,
): FullDiskRelief {
  // WAL pages when the disk was found full; undefined when it was not.
  let fullAtPages: number | undefined;

  function walPages(): number {
    try {
      return Math.floor(
        fs.statSync(`${filename}-wal`).size / (pragmaValue(sqlite, 'page_size') + WAL_FRAME_HEADER),
      );
    } catch {
      return 0;
    }
  }

  function checkpoint(pages: number): void {
    if (!sqlite.open || sqlite.inTransaction) return;
    try {
      // Copies the WAL into the database file and truncates it to zero bytes;
      // fails while the database file cannot grow (the disk is still full).
      const [r] = sqlite.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
      if (r?.busy !== 0) return;
    } catch {
      return;
    }
    fullAtPages = undefined;
    const interval = pragmaValue(sqlite, 'wal_autocheckpoint');
    const lowered = Math.max(MIN_WAL_AUTOCHECKPOINT, Math.floor(pages / 2));
    if (lowered < interval) sqlite.pragma(`wal_autocheckpoint = ${lowered}`);
    logger?.warn(
      {
        event: 'storage.wal_truncated',
        walPages: pages,
        walAutocheckpointPages: Math.min(lowered, interval),
      },
      'SQLite: writes had failed on a full disk; the WAL is checkpointed and emptied, and checkpointed more often from now on',
    );
  }

  return {
    beforeWork() {
      if (fullAtPages !== undefined) checkpoint(fullAtPages);
    },
    failed(err) {
      if (filename !== ':memory:' && err instanceof StorageError && err.reason === 'disk_full') {
        fullAtPages = Math.max(fullAtPages ?? 0, walPages());
      }
      return err;
    },
  };
}
