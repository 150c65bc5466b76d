/**
 * Starts the API process alone (the enclave must already be listening on its socket). `npm start`
 * runs this under the supervisor in main.ts.
 */
import { ActorVersionError } from '../actors/errors.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirInUseError, lockDataDir } from './data-dir-lock.ts';
import { startApi } from './server.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything reads the database: a second instance on this data directory stops here.
  const lock = lockDataDir(config.dataDir);
  const api = await startApi(config);
  await api.app.listen({ port: config.port, host: config.host });
  const addr = api.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  api.app.log.info(`admin token: ${api.adminTokenSource}`);
  console.log(`api listening on http://${config.host}:${port} (docs at /docs)`);
  if (process.send) process.send({ type: 'ready', port });
  api.warm();

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    api.app.log.info(`${signal}: shutting down`);
    await api.close();
    lock.release();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** Exit code of a configuration error (EX_CONFIG): the supervisor stops instead of restarting. */
const EX_CONFIG = 78;
/** Exit code when the data directory or a port is held by another process (EX_TEMPFAIL: retry once it is free). */
const EX_IN_USE = 75;

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof ActorVersionError) {
    console.error(err.message);
    process.exit(EX_CONFIG);
  }
  if (err instanceof DataDirInUseError) {
    console.error(`api: ${err.message}`);
    process.exit(EX_IN_USE);
  }
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e.code === 'EADDRINUSE') {
    console.error(
      `api: ${e.address}:${e.port} is in use by another process (another instance?): stop it or choose another port`,
    );
    process.exit(EX_IN_USE);
  }
  console.error(`api failed to start: ${(err as Error).message}`);
  process.exit(1);
});
