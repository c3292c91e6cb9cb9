/**
 * The kit reaches storage only through the StorageAdapter seam: outside
 * src/storage no module imports the built-in implementation, and the sealing
 * layer that every module's storage comes from uses the built-in adapter's
 * extras (kit.db, transactions, app tables) by type only. Read from the
 * sources' value imports (type-only imports vanish at run time).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Specifiers of value imports (not `import type`, not `export type`). */
function valueImports(file: string): string[] {
  const code = readFileSync(file, 'utf8');
  return [...code.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)].map(
    (m) => m[1]!,
  );
}

describe('storage boundary', () => {
  it('outside src/storage, modules import storage only through its entry, options, url and types', () => {
    // scoped-tables.js: the declared tables' check (drizzle-orm's table helpers, no driver);
    // adapter-storage.js: the sealing over any adapter (the Workers entry's storage, no driver).
    const allowed = new Set([
      'index.js',
      'options.js',
      'url.js',
      'types.js',
      'contract.js',
      'scoped-tables.js',
      'adapter-storage.js',
    ]);
    const offending: string[] = [];
    for (const file of files(src)) {
      const rel = relative(src, file);
      if (rel.startsWith('storage/') || rel.startsWith('platform/')) continue;
      for (const spec of valueImports(file)) {
        const target = resolve(dirname(file), spec);
        if (!relative(src, target).startsWith('storage/')) continue;
        if (!allowed.has(relative(join(src, 'storage'), target)))
          offending.push(`${rel} → ${spec}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('the sealing layer reaches the built-in implementation by type only', () => {
    const imports = valueImports(join(src, 'storage', 'sealed.ts')).filter((s) =>
      s.startsWith('./'),
    );
    // ./clock.js: the database-clock estimate over any adapter's clock(), no driver.
    // ./complete-batch.js: coalesces refreshed-token writes for any adapter's completeMany(), no driver.
    expect(imports.sort()).toEqual(['./clock.js', './complete-batch.js', './session-store.js']);
  });
});
