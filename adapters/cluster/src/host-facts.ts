import { readFile, statfs } from 'node:fs/promises';
import { cpus, networkInterfaces, release, totalmem } from 'node:os';
import type { HostFacts } from './node-object.js';

/** Go's names of Node's architectures, as a Node's `kubernetes.io/arch` label and `nodeInfo` say them. */
export function goArch(arch: string = process.arch): string {
  return arch === 'x64' ? 'amd64' : arch === 'ia32' ? '386' : arch;
}

/**
 * What the kubelet reads of its host for `nodeInfo` and capacity: the OS's pretty name, the
 * kernel, the boot and machine ids, every online CPU, all memory, and the size of the file system
 * of `fsPath` (where the pods' volumes are: ephemeral storage). A file it cannot read gives an empty
 * field, as the kubelet leaves one it cannot fill.
 */
export async function hostFacts(fsPath: string): Promise<HostFacts> {
  const text = (path: string) =>
    readFile(path, 'utf8').then(
      (t) => t.trim(),
      () => '',
    );
  const osRelease = await text('/etc/os-release');
  const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(osRelease)?.[1] ?? 'Linux';
  const fs = await statfs(fsPath).catch(() => undefined);
  return {
    osImage: pretty,
    kernelVersion: release(),
    architecture: goArch(),
    bootID: await text('/proc/sys/kernel/random/boot_id'),
    machineID: await text('/etc/machine-id'),
    systemUUID: (await text('/sys/class/dmi/id/product_uuid')).toLowerCase(),
    capacity: {
      cpuMillis: cpus().length * 1000,
      memoryBytes: totalmem(),
      ephemeralStorageBytes: fs === undefined ? 0 : fs.blocks * fs.bsize,
    },
  };
}

/** The host's first IPv4 address that is not loopback, as the kubelet picks a node IP without `--node-ip`. */
export function firstMachineAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces()))
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}
