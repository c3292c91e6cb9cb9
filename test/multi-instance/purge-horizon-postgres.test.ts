import { POSTGRES } from '../helpers/databases.js';
import { purgeHorizonSuite } from './purge-horizon.js';

purgeHorizonSuite('Postgres', () => POSTGRES.create('sak_horizon'));
