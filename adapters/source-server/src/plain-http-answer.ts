import type { Server } from 'node:https';
import type { Socket } from 'node:net';

/** What Go's net/http writes, before closing, to a request made in clear on its TLS port. */
export const PLAIN_HTTP_ANSWER = 'HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n';

/**
 * Makes the TLS `server` answer a plain-HTTP request with Go's 400 (`PLAIN_HTTP_ANSWER`) rather than
 * drop it without a word at the handshake (issue 27 item 3): someone who typed `http://` learns why.
 *
 * Each connection's first bytes are read before TLS sees them. A TLS record starts with its content
 * type (0x14–0x18, 0x16 for a handshake; 0x80 and up for an SSLv2 hello) and every HTTP method with
 * an upper-case letter, so one byte decides. Anything else is put back and handed to Node's TLS
 * layer, as Node documents for injecting a socket into a server (its 'connection' event). A
 * connection that sends nothing within `firstByteTimeoutMs` is closed: the handshake timeout
 * starts only when TLS gets the socket.
 */
export function answerPlainHttp(server: Server, firstByteTimeoutMs: number): void {
  // tls.Server starts the handshake from its one 'connection' listener; it is called once the first
  // byte is known instead. Anything else there means Node changed: fail at start, not silently.
  const [handshake, ...others] = server.listeners('connection') as ((this: Server, socket: Socket) => void)[];
  if (handshake === undefined || others.length > 0)
    throw new Error(
      `expected one 'connection' listener on a fresh https server, found ${others.length + (handshake === undefined ? 0 : 1)}`,
    );
  server.removeListener('connection', handshake);
  server.on('connection', (socket: Socket) => {
    const drop = () => socket.destroy();
    socket.setTimeout(firstByteTimeoutMs, drop);
    socket.on('error', drop);
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      if (isMethodLetter(chunk[0])) {
        // What the client still sends is read and dropped: closing with unread data would reset
        // the connection, and the client might lose the answer. The idle timeout stays.
        socket.resume();
        socket.end(PLAIN_HTTP_ANSWER);
        return;
      }
      socket.setTimeout(0, drop);
      socket.off('error', drop);
      socket.unshift(chunk);
      handshake.call(server, socket);
    });
  });
}

function isMethodLetter(byte: number | undefined): boolean {
  return byte !== undefined && byte >= 0x41 && byte <= 0x5a;
}
