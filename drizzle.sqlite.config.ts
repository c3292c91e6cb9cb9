import { defineConfig } from 'drizzle-kit';

// `npx drizzle-kit generate --config drizzle.sqlite.config.ts` after editing the schema.
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/storage/schema/sqlite.ts',
  out: './migrations/sqlite',
});
