import { importGroup } from './groups.ts';

importGroup('enclave-processes');
