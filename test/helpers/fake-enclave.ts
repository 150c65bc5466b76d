/**
 * A stand-in enclave for tests: it speaks the framed protocol and answers the identity handshake correctly, but
 * with its own Ed25519 key (node:crypto), the way an impostor that bound the socket first would. `answer` decides
 * every other reply (undefined: no reply). `hello` may be replaced to answer the handshake wrongly.
 */
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { createFrameDecoder, encodeFrame } from '../../enclave/framing.ts';
import { helloMessage, identityFingerprint, NONCE_BYTES } from '../../enclave/identity.ts';
import type { EnclaveReply, EnclaveRequest } from '../../enclave/protocol.ts';

/** An Ed25519 identity a fake enclave signs handshakes with. */
export interface FakeIdentity {
  publicKey: Buffer;
  fingerprint: string;
  /** A valid answer to `hello` for `challenge` (base64), with a fresh nonce. */
  answerHello(request: EnclaveRequest): EnclaveReply;
  /** Signs arbitrary bytes with this identity (to build wrong answers). */
  sign(message: Uint8Array): Buffer;
}

/** A new random identity. */
export function createFakeIdentity(): FakeIdentity {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return fakeIdentityFrom(privateKey, publicKey);
}

function fakeIdentityFrom(privateKey: KeyObject, publicKeyObject: KeyObject): FakeIdentity {
  const spki = publicKeyObject.export({ type: 'spki', format: 'der' });
  const publicKey = spki.subarray(spki.length - 32);
  const signBytes = (message: Uint8Array): Buffer => sign(null, message, privateKey);
  return {
    publicKey,
    fingerprint: identityFingerprint(publicKey),
    sign: signBytes,
    answerHello(request) {
      const challenge = Buffer.from(String((request.params as { challenge?: unknown }).challenge), 'base64');
      const nonce = Buffer.alloc(NONCE_BYTES, 7);
      return {
        id: request.id,
        ok: true,
        result: {
          publicKey: publicKey.toString('base64'),
          nonce: nonce.toString('base64'),
          signature: signBytes(helloMessage(challenge, nonce, publicKey)).toString('base64'),
        },
      };
    },
  };
}

export interface FakeEnclave {
  listening: Promise<void>;
  /** Every op received, in order, on any connection. */
  ops: string[];
  dropConnections(): void;
  close(): Promise<void>;
}

/** Listens on `socketPath`; answers `hello` with `identity` (or `hello`), everything else with `answer`. */
export function startFakeEnclave(
  socketPath: string,
  options: {
    identity?: FakeIdentity;
    answer?: (request: EnclaveRequest, socket: Socket) => EnclaveReply | undefined;
    hello?: (request: EnclaveRequest, socket: Socket) => EnclaveReply | undefined;
    /** Called with every request received, before it is answered. */
    onRequest?: (request: EnclaveRequest) => void;
  } = {},
): FakeEnclave & { identity: FakeIdentity } {
  const identity = options.identity ?? createFakeIdentity();
  const answer = options.answer ?? (() => undefined);
  const hello = options.hello ?? ((request: EnclaveRequest) => identity.answerHello(request));
  const ops: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const decoder = createFrameDecoder({
      onFrame: (body) => {
        const request = JSON.parse(body.toString('utf8')) as EnclaveRequest;
        ops.push(request.op);
        options.onRequest?.(request);
        const reply = request.op === 'hello' ? hello(request, socket) : answer(request, socket);
        if (reply && socket.writable) socket.write(encodeFrame(reply));
      },
      onBadLength: () => socket.destroy(),
    });
    socket.on('data', (chunk: Buffer) => decoder.push(chunk));
  });
  const listening = new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    identity,
    listening,
    ops,
    dropConnections() {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
