/**
 * `npm run dev` runs this before `tsx watch src/dev.ts`: with the app's or the
 * local platform's port already taken it prints one line (the port, what it is
 * for, the setting and the fix) and exits 1, so the watcher never starts
 * waiting on a process that cannot listen.
 */
import { checkDevPorts } from './dev-loop.js';

await checkDevPorts();
