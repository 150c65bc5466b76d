/**
 * A raw connection to the enclave socket for protocol tests: sends arbitrary bytes and collects decoded replies.
 * By default it first performs the identity handshake (the enclave answers nothing else before it) and checks
 * the signature; `{ hello: false }` leaves the connection as it opened.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { createFrameDecoder, encodeFrame } from '../../enclave/framing.ts';
import { CHALLENGE_BYTES, type EnclaveIdentity, verifyHello } from '../../enclave/identity.ts';
import type { EnclaveReply } from '../../enclave/protocol.ts';

/** The id of the helper's own hello: far from the ids tests use. */
const HELLO_ID = 2 ** 40;

export interface RawEnclaveSocket {
  socket: Socket;
  /** The identity the enclave proved in the handshake (undefined with `{ hello: false }`). */
  identity: EnclaveIdentity | undefined;
  replies: EnclaveReply[];
  /** Resolves once at least `count` replies have arrived (rejects after `timeoutMs`). */
  waitForReplies(count: number, timeoutMs?: number): Promise<EnclaveReply[]>;
  /** Resolves when the enclave has closed the connection (rejects after `timeoutMs`). */
  waitForClose(timeoutMs?: number): Promise<void>;
  send(bytes: Buffer | string): void;
  destroy(): void;
}

/** Opens a raw connection to `socketPath` (handshake done unless `hello: false`). */
export async function openRawSocket(socketPath: string, options: { hello?: boolean } = {}): Promise<RawEnclaveSocket> {
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

  let identity: EnclaveIdentity | undefined;
  if (options.hello !== false) {
    const challenge = randomBytes(CHALLENGE_BYTES);
    const answered = new Promise<void>((resolve) => {
      notify = () => {
        if (replies.length > 0) resolve();
      };
    });
    socket.write(encodeFrame({ id: HELLO_ID, op: 'hello', params: { challenge: challenge.toString('base64') } }));
    await answered;
    const reply = replies.shift()!;
    notify = () => undefined;
    if (reply.id !== HELLO_ID || !reply.ok) throw new Error(`the enclave refused hello: ${JSON.stringify(reply)}`);
    const verified = verifyHello(challenge, reply.result);
    if (!verified.ok) throw new Error(`the enclave's hello does not verify: ${verified.problem}`);
    identity = verified.identity;
  }

  return {
    socket,
    identity,
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
