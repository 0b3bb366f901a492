import type { ContainerRuntime, SandboxSpec, SandboxSummary } from '@kubelet-ts/core';
import type { PodNetworkCapability } from './pod-contract.js';
import type { TestApi } from './test-api.js';

/**
 * What the pod-level contracts share, inside their `describe`: `run` makes a sandbox that is
 * removed (with its volumes) after the test; `withNetwork` declares a test that needs a real pod
 * network, left out where the runtime declares no `podNetwork`.
 */
export function podFixture(
  runtime: () => ContainerRuntime,
  options: { readonly name: string; readonly podNetwork?: PodNetworkCapability | undefined; readonly testApi: TestApi },
) {
  const { afterEach, it } = options.testApi;
  const sandboxes: string[] = [];
  afterEach(async () => {
    for (const id of sandboxes.splice(0)) await runtime().removeSandbox(id, { volumes: true });
  });
  const net = options.podNetwork;
  return {
    async run(spec: SandboxSpec): Promise<SandboxSummary> {
      const sandbox = await runtime().runSandbox(spec);
      sandboxes.push(sandbox.id);
      return sandbox;
    },
    withNetwork(title: string, body: (n: PodNetworkCapability) => Promise<void>): void {
      // A runtime with no pod network to look at (the in-memory one) has these checks left out;
      // the pod tests still check its bookkeeping.
      if (net !== undefined) it(title, () => body(net), 60_000);
    },
  };
}
