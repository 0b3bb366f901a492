import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { KubeletError } from '@kubelet-ts/core';
import type { PodSandbox, PortMapping } from './cri-api.js';
import { ADAPTER } from './errors.js';
import { portsOfVerboseInfo, recordOf } from './sandbox-config.js';

/**
 * The host ports of the runtime's ready sandboxes: ours from their annotation, others' from their
 * verbose status (`verbose`: containerd's carries the config a sandbox was run with).
 */
export async function publishedPorts(
  sandboxes: readonly PodSandbox[],
  verbose: (id: string) => Promise<{ readonly info: Readonly<Record<string, string>> } | undefined>,
): Promise<Array<{ sandbox: string; ports: PortMapping[] }>> {
  const out: Array<{ sandbox: string; ports: PortMapping[] }> = [];
  for (const s of sandboxes) {
    if (s.state !== 'SANDBOX_READY') continue;
    const ports = recordOf(s.annotations)?.portMappings ?? portsOfVerboseInfo((await verbose(s.id))?.info ?? {});
    if (ports.length > 0) out.push({ sandbox: s.metadata?.name ?? s.id, ports });
  }
  return out;
}

/**
 * CRI publishes a sandbox's host ports with the CNI portmap plugin: firewall rules, no socket. Two
 * sandboxes given one host port both start, and the later quietly takes the traffic; a process
 * listening on the port is shadowed too. The kubelet leaves this to the scheduler; an agent that
 * runs manifests as given must refuse instead (the contract: a host port another holds rejects).
 * So before a sandbox runs: its ports must not be among those of the runtime's ready sandboxes
 * (`taken`), and each must be free to bind on the host.
 */
export async function assertHostPortsFree(
  sandbox: string,
  wanted: readonly PortMapping[],
  taken: ReadonlyArray<{ readonly sandbox: string; readonly ports: readonly PortMapping[] }>,
): Promise<void> {
  for (const port of wanted) {
    for (const other of taken) {
      if (other.ports.some((p) => clashes(p, port))) {
        throw new KubeletError(
          'Conflict',
          `run sandbox ${sandbox}: host port ${describe(port)} is already published by sandbox ${other.sandbox}`,
          { adapter: ADAPTER },
        );
      }
    }
    const holder = await bindProbe(port);
    if (holder !== undefined) {
      throw new KubeletError('Conflict', `run sandbox ${sandbox}: host port ${describe(port)} is already in use on this host (${holder})`, {
        adapter: ADAPTER,
      });
    }
  }
}

function clashes(a: PortMapping, b: PortMapping): boolean {
  return a.hostPort === b.hostPort && a.protocol === b.protocol && (isAny(a.hostIp) || isAny(b.hostIp) || a.hostIp === b.hostIp);
}

function isAny(ip: string): boolean {
  return ip === '' || ip === '0.0.0.0' || ip === '::';
}

function describe(p: PortMapping): string {
  return `${isAny(p.hostIp) ? '*' : p.hostIp}:${p.hostPort}/${p.protocol.toLowerCase()}`;
}

/** Binds the port for a moment; the error code when something else holds it, else `undefined`. */
function bindProbe(port: PortMapping): Promise<string | undefined> {
  const host = isAny(port.hostIp) ? '0.0.0.0' : port.hostIp;
  return new Promise((resolve) => {
    // Only "in use" is an answer: a probe we may not make (a privileged port, an address not on
    // this host) says nothing, and the runtime decides.
    const settle = (error: NodeJS.ErrnoException | undefined) => resolve(error?.code === 'EADDRINUSE' ? 'EADDRINUSE' : undefined);
    if (port.protocol === 'UDP') {
      const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
      socket.once('error', (error) => {
        socket.close();
        settle(error);
      });
      socket.bind({ address: host, port: port.hostPort, exclusive: true }, () => socket.close(() => settle(undefined)));
      return;
    }
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => settle(error));
    server.listen({ host, port: port.hostPort, exclusive: true }, () => server.close(() => settle(undefined)));
  });
}
