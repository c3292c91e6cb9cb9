import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The UI's sources are in web/; `vite build` writes dist/client, which the server serves
// (src/frontend.ts). `npm run dev` runs Vite inside the server instead (src/dev-frontend.ts).
export default defineConfig({
  root: 'web',
  plugins: [react()],
  build: { outDir: '../dist/client', emptyOutDir: true },
});
