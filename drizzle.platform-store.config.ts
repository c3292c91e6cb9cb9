import { defineConfig } from 'drizzle-kit';

// The local platform's store-side tables (owned by src/platform/api and seed).
export default defineConfig({
  dialect: 'sqlite',
  schema: './src/platform/db/store-schema.ts',
  out: './migrations/platform-store',
});
