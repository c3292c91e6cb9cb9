import { defineConfig } from 'drizzle-kit';

// `npx drizzle-kit generate --config drizzle.postgres.config.ts` after editing the schema.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/storage/schema/postgres.ts',
  out: './migrations/postgres',
});
