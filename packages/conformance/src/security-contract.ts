import { readFileSync } from 'node:fs';
import {
  KubeletError,
  Labels,
  buildContainerName,
  sandboxHash,
  type ContainerRuntime,
  type ContainerSecurity,
  type ContainerSpec,
} from '@kubelet-ts/core';
import type { TestApi } from './test-api.js';

interface SecurityContractOptions {
  readonly name: string;
  /** False for a runtime whose containers run no real code: what it was asked for is read back from `inspect` instead. */
  readonly realExec?: boolean;
  readonly testApi: TestApi;
}

/** CAP_NET_BIND_SERVICE is bit 10 of a capability mask. */
const NET_BIND_SERVICE_ONLY = '0000000000000400';
/** CAP_SYS_ADMIN, bit 21: in no engine's default set, in a privileged container's. */
const SYS_ADMIN = 1n << 21n;

/** The capabilities (by bit) the kernel knows and this process's bounding set lacks: what no container here can be given. */
function missingHostCapabilities(): number[] {
  const last = Number(readFileSync('/proc/sys/kernel/cap_last_cap', 'utf8'));
  const bounding = BigInt(`0x${/CapBnd:\s+([0-9a-f]+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`);
  return Array.from({ length: last + 1 }, (_, bit) => bit).filter((bit) => (bounding & (1n << BigInt(bit))) === 0n);
}

/** The effective capability mask `grep CapEff /proc/self/status` printed. */
const capEff = (output: string): bigint => BigInt(`0x${/CapEff:\s+([0-9a-f]+)/.exec(output)?.[1] ?? '0'}`);

/**
 * The securityContext part of `runtimeContract`: who a container runs as and what it may do, seen
 * from inside it (`id`, `/proc/self/status`, a write to `/`) on a runtime that runs real
 * processes, and as the spec it keeps on one that does not. `spec` makes a contract spec for a
 * pod and a container; `create` makes it in the contract's sandbox, removed after the test. The
 * image runs as root, as busybox does.
 */
export function securityContract(
  runtime: () => ContainerRuntime,
  spec: (podId: string, container: string) => ContainerSpec,
  create: (spec: ContainerSpec) => Promise<{ readonly id: string }>,
  options: SecurityContractOptions,
): void {
  const { describe, expect, it } = options.testApi;
  const real = options.realExec !== false;

  describe('securityContext', () => {
    /** Runs a container with `security` and returns what `script` prints in it (on a runtime without real processes, ''). */
    const runWith = async (container: string, security: ContainerSecurity, script?: string) => {
      const r = runtime();
      const { id } = await create({ ...spec('contract-sec', container), security });
      await r.start(id);
      expect((await r.inspect(id)).state).toBe('running');
      if (!real) {
        expect((await r.inspect(id)).spec.security).toEqual(security);
        return { id, output: '', exitCode: 0 };
      }
      const result = script === undefined ? { output: '', exitCode: 0 } : await r.exec(id, ['sh', '-c', script], 10_000);
      return { id, ...result };
    };

    it('runs the container as the user, group and supplemental groups it is given', async () => {
      const { output } = await runWith('ids', { user: 1000, group: 3000, supplementalGroups: [4000, 5000] }, 'id -u; id -g; id -G');
      if (!real) return;
      const [uid, gid, groups] = output.trim().split('\n');
      expect(uid).toBe('1000');
      expect(gid).toBe('3000');
      expect(groups?.split(' ').filter((g) => g === '4000' || g === '5000')).toEqual(['4000', '5000']);
    });

    it('lets a non-root user write to its pod volume, as to a kubelet emptyDir', async () => {
      const r = runtime();
      const mounts = [{ volume: 'scratch', containerPath: '/scratch', readOnly: false }];
      const { id } = await create({ ...spec('contract-sec', 'writer'), mounts, security: { user: 1000, group: 1000 } });
      await r.start(id);
      if (!real) return;
      const result = await r.exec(id, ['sh', '-c', 'echo written > /scratch/by-1000 && stat -c %u /scratch/by-1000'], 10_000);
      expect(result.output.trim()).toBe('1000');
    });

    it("runs a group given alone with the image's user (root here)", async () => {
      const { output } = await runWith('group', { group: 3000 }, 'id -u; id -g');
      if (real) expect(output.trim().split('\n')).toEqual(['0', '3000']);
    });

    it('drops every capability but the one added, sets no_new_privs, and keeps the root file system read-only', async () => {
      const script = "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch /written-by-contract && echo root-writable";
      const { output } = await runWith(
        'caps',
        { capDrop: ['ALL'], capAdd: ['NET_BIND_SERVICE'], noNewPrivileges: true, readOnlyRootFilesystem: true },
        script,
      );
      if (!real) return;
      expect(/CapEff:\s+(\w+)/.exec(output)?.[1]).toBe(NET_BIND_SERVICE_ONLY);
      expect(/NoNewPrivs:\s+(\d)/.exec(output)?.[1]).toBe('1');
      expect(output).toContain('Read-only file system');
      expect(output).not.toContain('root-writable');
    });

    it("keeps the engine's default capabilities when only the user is said (root has no CAP_SYS_ADMIN)", async () => {
      const { output } = await runWith('default', { user: 0 }, "grep '^CapEff' /proc/self/status");
      if (!real) return;
      const mask = capEff(output);
      expect(mask > 0n).toBe(true);
      expect(mask & SYS_ADMIN).toBe(0n);
    });

    it('gives a privileged container, in a privileged sandbox, every capability the host has', async () => {
      const r = runtime();
      const podId = `contract-priv-${process.pid}`;
      const sandbox = await r.runSandbox({
        name: buildContainerName(podId, 'POD'),
        podId,
        hostname: podId,
        ports: [],
        privileged: true,
        labels: {
          [Labels.sandbox]: podId,
          [Labels.sandboxHash]: sandboxHash([]),
          [Labels.node]: 'contract-node',
          [Labels.source]: 'contract',
        },
      });
      try {
        const { id } = await r.create({ ...spec(podId, 'privileged'), security: { privileged: true } }, sandbox.id);
        const refused = await r.start(id).then(
          () => undefined,
          (e: unknown) => e,
        );
        if (refused !== undefined) {
          // Docker 20.10 asks the kernel for every capability it knows: on a host (or in a VM) whose
          // own bounding set lacks one, runc refuses, and the engine says so. Nothing else may fail.
          expect(missingHostCapabilities()).not.toEqual([]);
          expect(refused).toBeInstanceOf(KubeletError);
          expect((refused as KubeletError).message).toContain('unable to apply caps');
          return;
        }
        if (!real) return void expect((await r.inspect(id)).spec.security).toEqual({ privileged: true });
        const { output } = await r.exec(id, ['sh', '-c', "grep '^CapEff' /proc/self/status"], 10_000);
        expect(capEff(output) & SYS_ADMIN).toBe(SYS_ADMIN);
      } finally {
        await r.removeSandbox(sandbox.id, { volumes: true });
      }
    });

    it('refuses to create a container that would run as root under runAsNonRoot, and runs it under a non-root runAsUser', async () => {
      const refused = await create({ ...spec('contract-sec', 'nonroot'), security: { runAsNonRoot: true } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(KubeletError);
      expect((refused as KubeletError).code).toBe('InvalidManifest');
      expect((refused as KubeletError).message).toContain('runAsNonRoot');
      expect((await runtime().list()).some((c) => c.name === spec('contract-sec', 'nonroot').name)).toBe(false);
      const { output } = await runWith('nonroot', { runAsNonRoot: true, user: 1000 }, 'id -u');
      if (real) expect(output.trim()).toBe('1000');
    });
  });
}
