import { importGroup } from './groups.ts';

importGroup('rest');
