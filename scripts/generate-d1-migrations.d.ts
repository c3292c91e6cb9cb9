/** Paths of migrations/d1 and src/storage/d1/migrations.ts out of date with migrations/sqlite. */
export function staleD1Migrations(): string[];
