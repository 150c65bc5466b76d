import { importGroup } from './groups.ts';

importGroup('api');
