/**
 * A raw connection to the enclave socket for protocol tests: sends arbitrary bytes and collects decoded replies.
 */
import { connect, type Socket } from 'node:net';
import { createFrameDecoder } from '../../enclave/framing.ts';
import type { EnclaveReply } from '../../enclave/protocol.ts';

export interface RawEnclaveSocket {
  socket: Socket;
  replies: EnclaveReply[];
  /** Resolves once at least `count` replies have arrived (rejects after `timeoutMs`). */
  waitForReplies(count: number, timeoutMs?: number): Promise<EnclaveReply[]>;
  /** Resolves when the enclave has closed the connection (rejects after `timeoutMs`). */
  waitForClose(timeoutMs?: number): Promise<void>;
  send(bytes: Buffer | string): void;
  destroy(): void;
}

/** Opens a raw connection to `socketPath`. */
export async function openRawSocket(socketPath: string): Promise<RawEnclaveSocket> {
  const socket = connect(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => undefined);
  const replies: EnclaveReply[] = [];
  let notify = (): void => undefined;
  const decoder = createFrameDecoder({
    onFrame: (body) => {
      replies.push(JSON.parse(body.toString('utf8')) as EnclaveReply);
      notify();
    },
    onBadLength: (length) => {
      throw new Error(`enclave sent a frame of length ${length}`);
    },
  });
  socket.on('data', (chunk: Buffer) => decoder.push(chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));

  return {
    socket,
    replies,
    waitForReplies(count, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (replies.length >= count) {
            clearTimeout(timer);
            notify = () => undefined;
            resolve(replies);
          }
        };
        const timer = setTimeout(
          () => reject(new Error(`only ${replies.length} of ${count} replies arrived`)),
          timeoutMs,
        );
        notify = check;
        check();
      });
    },
    waitForClose(timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the enclave kept the connection open')), timeoutMs);
        closed.then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    send(bytes) {
      socket.write(bytes);
    },
    destroy() {
      socket.destroy();
    },
  };
}
