// Types for scripts/doc-examples.js (plain JS, run by node; imported by a test).
export interface DocExample {
  /** `docs/runtimes.md:120`: the file and line of the block's opening fence. */
  from: string;
  /** `default`, or the consumer program named by `<!-- check-in: … -->`. */
  program: string;
  /** The path a block names in its first line (`// lib/store-app.ts`), in a runtime program. */
  file: string | null;
  code: string;
}
export function extractExamples(root: string): DocExample[];
