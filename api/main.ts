/**
 * Starts the API process alone (the enclave must already be listening on its socket). `npm start`
 * runs this under the supervisor in main.ts.
 */
import { ConfigError, loadConfig } from './config.ts';
import { startApi } from './server.ts';

const httpUrl = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

async function main(): Promise<void> {
  const config = loadConfig();
  const api = await startApi(config);
  const { port, adminPort } = await api.listen();
  api.app.log.info(`admin token: ${api.adminTokenSource}`);
  console.log(`api listening on ${httpUrl(config.host, port)} (docs at /docs)`);
  console.log(`admin API listening on ${httpUrl(config.adminHost, adminPort)} (/admin/v1, /metrics)`);
  if (process.send) process.send({ type: 'ready', port, adminPort });
  api.warm();

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    api.app.log.info(`${signal}: shutting down`);
    await api.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** Exit code of a configuration error (EX_CONFIG): the supervisor stops instead of restarting. */
const EX_CONFIG = 78;

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(EX_CONFIG);
  }
  console.error(`api failed to start: ${(err as Error).message}`);
  process.exit(1);
});
