import { describe } from 'vitest';
import { definePurgeSuite } from './suite.js';

describe('purge on Postgres', () => {
  definePurgeSuite('postgres');
});
