import { POSTGRES } from '../helpers/databases.js';
import { crashSuite, serverReader } from './suite.js';

crashSuite('Postgres', () => serverReader(POSTGRES, 'sak_crash'));
