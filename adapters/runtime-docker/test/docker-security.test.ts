import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { KubeletError, type ContainerSpec } from '@kubelet-ts/core';
import { securityOptionsOf } from '../src/docker-security.js';

const container: ContainerSpec = { name: 'web--main--1', podId: 'web', image: 'busybox', env: {}, ports: [], mounts: [], labels: {} };
const noImage = async (): Promise<unknown> => {
  throw new Error('the image was not asked for');
};

describe("Docker's create options of a container's security settings, as dockershim wrote them", () => {
  it('maps every setting onto User, HostConfig and SecurityOpt', async () => {
    const options = await securityOptionsOf(
      {
        ...container,
        security: {
          user: 1000,
          group: 3000,
          supplementalGroups: [4000],
          noNewPrivileges: true,
          readOnlyRootFilesystem: true,
          privileged: true,
          capAdd: ['NET_ADMIN'],
          capDrop: ['ALL'],
          seccomp: { type: 'Unconfined' },
          appArmor: { type: 'Localhost', localhostProfile: 'deny-write' },
          seLinux: { type: 'spc_t', level: 's0' },
        },
      },
      noImage,
      'sandbox-id',
    );
    expect(options).toEqual({
      User: '1000:3000',
      HostConfig: {
        GroupAdd: ['4000'],
        Privileged: true,
        ReadonlyRootfs: true,
        CapAdd: ['NET_ADMIN'],
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges', 'seccomp=unconfined', 'apparmor=deny-write', 'label=type:spc_t', 'label=level:s0'],
      },
    });
  });

  it("joins the holder's process namespace for a pod that shares one", async () => {
    expect(await securityOptionsOf({ ...container, sharedProcessNamespace: true }, noImage, 'sandbox-id')).toEqual({
      HostConfig: { PidMode: 'container:sandbox-id' },
    });
  });

  it("adds nothing for the engine's defaults: no settings, RuntimeDefault profiles", async () => {
    expect(await securityOptionsOf(container, noImage, 'sandbox-id')).toEqual({ HostConfig: {} });
    expect(
      await securityOptionsOf(
        { ...container, security: { seccomp: { type: 'RuntimeDefault' }, appArmor: { type: 'RuntimeDefault' } } },
        noImage,
        'sandbox-id',
      ),
    ).toEqual({ HostConfig: {} });
  });

  it("asks the image's user only to pair a lone group or to check runAsNonRoot", async () => {
    const image = (user: string) => async () => ({ Config: { User: user } });
    expect(await securityOptionsOf({ ...container, security: { group: 5 } }, image('nginx'), 'sandbox-id')).toEqual({
      User: 'nginx:5',
      HostConfig: {},
    });
    expect(await securityOptionsOf({ ...container, security: { group: 5 } }, image(''), 'sandbox-id')).toEqual({
      User: '0:5',
      HostConfig: {},
    });
    expect(await securityOptionsOf({ ...container, security: { runAsNonRoot: true } }, image('101'), 'sandbox-id')).toEqual({
      HostConfig: {},
    });
    const refused = securityOptionsOf({ ...container, security: { runAsNonRoot: true } }, image('root'), 'sandbox-id');
    await expect(refused).rejects.toBeInstanceOf(KubeletError);
    await expect(refused).rejects.toThrow('create web--main--1: runAsNonRoot is set and the image runs as root');
  });

  it('gives a Localhost seccomp profile as its JSON to Docker and as its path to Podman; a name with no directory, or no file, is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-seccomp-unit-'));
    try {
      const path = join(dir, 'audit.json');
      await writeFile(path, '{"defaultAction":"SCMP_ACT_LOG"}');
      const localhost = (localhostProfile: string): ContainerSpec => ({
        ...container,
        security: { seccomp: { type: 'Localhost', localhostProfile } },
      });
      expect((await securityOptionsOf(localhost(path), noImage, 'sandbox-id')).HostConfig.SecurityOpt).toEqual([
        'seccomp={"defaultAction":"SCMP_ACT_LOG"}',
      ]);
      expect((await securityOptionsOf(localhost(path), noImage, 'sandbox-id', 'podman')).HostConfig.SecurityOpt).toEqual([
        `seccomp=${path}`,
      ]);
      await expect(securityOptionsOf(localhost('audit.json'), noImage, 'sandbox-id')).rejects.toThrow(
        /is a name under the agent's seccomp directory, and none is set; give one \(--seccomp-profile-root/,
      );
      await expect(securityOptionsOf(localhost(join(dir, 'none.json')), noImage, 'sandbox-id', 'podman')).rejects.toThrow(
        /cannot be read \(ENOENT\); put it there, or give another localhostProfile/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
