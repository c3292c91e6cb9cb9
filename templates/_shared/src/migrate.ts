import { createApp } from './app.js';
import { loadDotEnv } from './env.js';

// Opening the app migrates the kit's tables and then the app's own; nothing listens.
loadDotEnv();
const { kit, close } = await createApp();
console.log(`Migrated the ${kit.dialect} database.`);
await close();
