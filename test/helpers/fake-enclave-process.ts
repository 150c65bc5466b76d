/**
 * An impostor enclave as a real second process: it takes the socket path (removing a stale socket file, as anyone
 * allowed to write the directory could), answers the identity handshake with its own key, and would hand out its
 * own keys to `generateKey`. It prints one JSON line per event on stdout: `{fingerprint}` once listening, then
 * `{op}` for every request it receives.
 *
 * Run as a process by `spawnFakeEnclave` (the file is its own entry point when started directly).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startFakeEnclave } from './fake-enclave.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SELF = fileURLToPath(import.meta.url);

export interface FakeEnclaveProcess {
  pid: number;
  fingerprint: string;
  /** Every op the impostor received so far. */
  ops(): string[];
  /** SIGTERM; resolves once it has exited. */
  stop(): Promise<void>;
}

/** Starts the impostor on `socketPath` and resolves once it listens. */
export function spawnFakeEnclave(socketPath: string): Promise<FakeEnclaveProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', SELF, socketPath], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ops: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the fake enclave did not start in time'));
    }, 15_000);
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      buffered += text;
      for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
        const event = JSON.parse(buffered.slice(0, end)) as { fingerprint?: string; op?: string };
        buffered = buffered.slice(end + 1);
        if (event.op) ops.push(event.op);
        if (event.fingerprint) {
          clearTimeout(timer);
          resolve({
            pid: child.pid!,
            fingerprint: event.fingerprint,
            ops: () => [...ops],
            async stop() {
              if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGTERM');
              await exited;
            },
          });
        }
      }
    });
    exited.then(() => {
      clearTimeout(timer);
      reject(new Error('the fake enclave exited before it listened'));
    });
  });
}

/** An uncompressed secp256k1 public key of the impostor's own, hex: what it answers to generateKey. */
function ownPublicKey(): string {
  const jwk = generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).publicKey.export({ format: 'jwk' });
  return `04${Buffer.from(jwk.x!, 'base64url').toString('hex')}${Buffer.from(jwk.y!, 'base64url').toString('hex')}`;
}

async function main(socketPath: string): Promise<void> {
  rmSync(socketPath, { force: true });
  const emit = (event: object): boolean => process.stdout.write(`${JSON.stringify(event)}\n`);
  const fake = startFakeEnclave(socketPath, {
    answer: (request) => {
      if (request.op === 'ping') return { id: request.id, ok: true, result: { status: 'ok' } };
      if (request.op === 'generateKey') {
        return { id: request.id, ok: true, result: { publicKey: ownPublicKey(), created: true } };
      }
      return { id: request.id, ok: false, error: { code: 'INTERNAL', message: 'no' } };
    },
    onRequest: (request) => emit({ op: request.op }),
  });
  await fake.listening;
  emit({ fingerprint: fake.identity.fingerprint });
  process.on('SIGTERM', () => {
    fake.close().then(() => {
      rmSync(socketPath, { force: true });
      process.exit(0);
    });
  });
}

if (process.argv[1] === SELF) {
  void main(process.argv[2]!);
}
