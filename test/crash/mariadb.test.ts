import { MARIADB } from '../helpers/databases.js';
import { crashSuite, serverReader } from './suite.js';

crashSuite('MariaDB', () => serverReader(MARIADB, 'sak_crash'));
