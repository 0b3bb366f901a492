import { afterAll } from '@jest/globals';
import { runtimeContract } from '@kubelet-ts/conformance';
import { RegistryServer, removePulledImage, TEST_IMAGES } from '@kubelet-ts/testkit';
import { criFixture, freePort, httpServer, type CriFixture } from './fixture.js';

let fixture: CriFixture | undefined;

afterAll(async () => {
  await fixture?.close();
});

runtimeContract(
  'cri',
  async () => {
    fixture = await criFixture();
    return fixture.runtime;
  },
  {
    // busybox's sleep ignores SIGTERM as PID 1, so stop exercises the kill at the timeout too.
    image: TEST_IMAGES.busybox,
    command: ['sleep', '3600'],
    // Its registry would be 127.0.0.1:1, refused at once: the pull test dials nothing off this host.
    missingImage: 'localhost:1/kubelet-ts/missing:none',
    podNetwork: {
      server: httpServer,
      fetch: (port) => ['wget', '-q', '-O', '-', `http://127.0.0.1:${port}/`],
      hostPort: freePort,
    },
    // containerd's own event service (see ContainerdEvents).
    events: {},
    logs: {},
    // CRI's ListContainerStats and ListPodSandboxStats (see CriStats), the sandbox's eth0 included.
    stats: {},
    // containerd's streaming server (see CriStreams): a session with stdin over SPDY, where its end
    // can be said (1.6 has no v5.channel.k8s.io); the others over WebSocket.
    streaming: { stdinEndOfFile: 'always' },
    // containerd 1.6 pulls from a loopback registry over plain HTTP by itself.
    pullSecrets: {
      privateImage: async () => {
        const registry = await RegistryServer.start();
        const image = await registry.push(TEST_IMAGES.busybox, 'contract/busybox:1');
        const close = async () => {
          await removePulledImage('containerd', image);
          await registry.stop();
        };
        return { image, username: registry.username, password: registry.password, close };
      },
    },
  },
);
