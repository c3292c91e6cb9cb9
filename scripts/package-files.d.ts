// Types for scripts/package-files.js (plain JS, run by node; imported by a test).
export function tarballFiles(tarball: string): string[];
export function committedFiles(root: string, dirs: string[]): string[];
export function packProblems(
  kind: 'kit' | 'creator',
  input: { files: string[]; committed: string[]; pkg: Record<string, unknown> },
): string[];
