import { defineConfig } from 'drizzle-kit';

// `npx drizzle-kit generate --config drizzle.mysql.config.ts` after editing the schema.
export default defineConfig({
  dialect: 'mysql',
  schema: './src/storage/schema/mysql.ts',
  out: './migrations/mysql',
});
