import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './src/platform/db/auth-schema.ts',
  out: './migrations/platform-auth',
  migrations: { table: '__platform_auth_migrations' },
});
