/**
 * The API process as the actor benchmark starts it: the real wiring (`startApi`) with one more machine, the test
 * counter, so that stored waiting actors of it are the API's own. Bundled by the benchmark like `npm start`
 * bundles api/main.ts. Reports `{type: 'ready', port}` over IPC once listening.
 */
import { loadConfig } from '../../api/config.ts';
import { startApi } from '../../api/server.ts';
import { counterDefinition } from '../helpers/actor-machines.ts';

const config = loadConfig();
const api = await startApi(config, { extraDefinitions: [counterDefinition()] });
await api.app.listen({ port: config.port, host: config.host });
const addr = api.app.server.address();
process.send?.({ type: 'ready', port: typeof addr === 'object' && addr ? addr.port : config.port });
process.on('SIGTERM', () => {
  void api.close().then(() => process.exit(0));
});
