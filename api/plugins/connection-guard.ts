import type http from 'node:http';
import type { Socket } from 'node:net';

interface Tracked {
  socket: Socket;
  /** The request on this connection whose answer is not finished, if any. */
  req?: http.IncomingMessage;
}

/**
 * Holds a listener to `cap` open connections without letting slow clients lock everyone else out.
 *
 * Node's own `server.maxConnections` refuses the newcomer at the cap: a crowd of idle or trickling
 * connections that reconnects as fast as the timeouts close it then keeps the listener full, and a caller
 * with a real request waits in the accept queue. Here the newcomer is admitted and the connection that has
 * gone longest without progress is closed instead: one that has not finished sending its request (head or
 * body) or sits idle between requests. A connection whose request has fully arrived and is being answered
 * is never closed. Only when every connection is being answered is the newcomer closed.
 *
 * Connections are kept in the order of their last progress (connected, request head received, answer
 * finished), so the first closable one is found from the front.
 */
export function guardConnections(
  server: http.Server,
  cap: number,
  hooks: { onEvicted?: () => void; onDropped?: () => void } = {},
): { readonly open: number } {
  const tracked = new Map<Socket, Tracked>();
  const touch = (t: Tracked) => {
    tracked.delete(t.socket);
    tracked.set(t.socket, t);
  };
  const closable = (t: Tracked) => t.req === undefined || !t.req.complete;

  server.on('connection', (socket: Socket) => {
    const entry: Tracked = { socket };
    tracked.set(socket, entry);
    socket.once('close', () => tracked.delete(socket));
    if (tracked.size <= cap) return;
    for (const t of tracked.values()) {
      if (t === entry) break;
      if (closable(t)) {
        tracked.delete(t.socket);
        t.socket.destroy();
        hooks.onEvicted?.();
        return;
      }
    }
    tracked.delete(socket);
    socket.destroy();
    hooks.onDropped?.();
  });

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const t = tracked.get(req.socket);
    if (!t) return;
    t.req = req;
    touch(t);
    res.once('close', () => {
      if (t.req !== req) return;
      t.req = undefined;
      if (tracked.has(t.socket)) touch(t);
    });
  });

  return {
    get open() {
      return tracked.size;
    },
  };
}
