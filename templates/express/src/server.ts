import { createApp } from './app.js';
import { loadDotEnv } from './env.js';

loadDotEnv();
const { app, close } = await createApp();
const port = Number(process.env['PORT'] ?? 3000);
const server = app.listen(port, () => {
  console.log(`App listening on port ${port}`);
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close();
    void close();
  });
}
