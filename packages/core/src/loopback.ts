import { isIP } from 'node:net';

/**
 * `localhost`, 127.0.0.0/8 or `::1` (a name or address as given to `listen`, or a socket's): the
 * one test of "this host only" for the agent's server, its node address and the CLI's `--node-ip`.
 * `::1` in any spelling (`0:0::1`, with a zone such as `%lo`): the URL parser writes each as `[::1]`.
 */
export function isLoopback(address: string): boolean {
  if (address === 'localhost' || address.startsWith('127.')) return true;
  return isIP(address) === 6 && new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname === '[::1]';
}
