import { MARIADB } from '../helpers/databases.js';
import { purgeHorizonSuite } from './purge-horizon.js';

purgeHorizonSuite('MariaDB', () => MARIADB.create('sak_horizon'));
