/**
 * Starts the API process alone (the enclave must already be listening on its socket). `npm start`
 * runs this under the supervisor in main.ts.
 *
 * The admin token may come as `ADMIN_TOKEN`, `ADMIN_TOKEN_FD` (a descriptor: the supervisor's way, which
 * keeps it out of `/proc/<pid>/environ`) or the systemd credential `admin-token`; else `$DATA_DIR/admin-token`.
 * It is removed from `process.env` before anything else starts, so no worker thread inherits it.
 */
import { ActorVersionError } from '../actors/host/errors.ts';
import { readSecret, SecretSourceError } from '../enclave/public.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirInUseError, lockDataDir } from './data-dir-lock.ts';
import { startApi } from './server.ts';

const httpUrl = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

async function main(): Promise<void> {
  const adminToken = readSecret('ADMIN_TOKEN', { env: process.env });
  // A descriptor or credential usually ends with a newline; a variable is taken as it is.
  const token = adminToken && (adminToken.kind === 'env' ? adminToken.value : adminToken.value.trim());
  const config = loadConfig(token === undefined ? process.env : { ...process.env, ADMIN_TOKEN: token });
  // Before anything reads the database: a second instance on this data directory stops here.
  const lock = lockDataDir(config.dataDir);
  const api = await startApi(config);
  const { port, adminPort } = await api.listen();
  api.app.log.info(`admin token: ${api.adminTokenSource}`);
  console.log(`api listening on ${httpUrl(config.host, port)} (docs at /docs)`);
  console.log(`admin API listening on ${httpUrl(config.adminHost, adminPort)} (/admin/v1, /metrics)`);
  if (process.send) process.send({ type: 'ready', port, adminPort });

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
  // Started by the supervisor: if it dies (even by SIGKILL) the channel closes, and this process stops too, rather
  // than keep the data directory and the ports from the supervisor that replaces it.
  if (process.send) process.once('disconnect', () => void shutdown('the supervisor is gone'));
}

/** Exit code of a configuration error (EX_CONFIG): the supervisor stops instead of restarting. */
const EX_CONFIG = 78;
/** Exit code when the data directory or a port is held by another process (EX_TEMPFAIL: retry once it is free). */
const EX_IN_USE = 75;

main().catch((err) => {
  if (err instanceof ConfigError || err instanceof SecretSourceError || err instanceof ActorVersionError) {
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
