import { createServer } from 'node:http';
import { createApp } from './app.js';
import { loadDotEnv } from './env.js';
import { assertBuilt } from './frontend.js';
import { SERVER_OPTIONS } from './server-options.js';

loadDotEnv();
try {
  assertBuilt();
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
const { app, kit, close } = await createApp();
const port = Number(process.env['PORT'] ?? 3000);
const server = createServer(SERVER_OPTIONS, app);
server.listen(port);
server.on('listening', () => {
  console.log(`App listening on port ${port}`);
});
// A taken port is an operator mistake: one line that says what to change, and a failing exit.
server.on('error', (err: NodeJS.ErrnoException) => {
  const hint = 'set PORT to a free port (in .env or the environment) and start again';
  if (err.code === 'EADDRINUSE') console.error(`Port ${port} is already in use; ${hint}.`);
  else if (err.code === 'EACCES') console.error(`Port ${port} needs privileges; ${hint}.`);
  else console.error(`Cannot listen on port ${port}: ${err.message}`);
  void close().finally(() => process.exit(1));
});

// SIGTERM and SIGINT: health answers 503 "draining", keep-alive clients are told to close,
// requests already accepted finish, then the kit closes and the process exits, within
// shutdown.deadlineMs (8 s). See store-app-kit's docs/operations.md.
kit.shutdownOnSignals({ server });
