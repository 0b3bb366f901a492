import { Labels, type ContainerRuntime, type ContainerSpec } from '@kubelet-ts/core';

/** A container spec of pod `pod` running `app:1`, labelled as the agent would; `extra` overrides. */
export const spec = (name: string, extra: Partial<ContainerSpec> = {}): ContainerSpec => ({
  name,
  podId: 'pod',
  image: 'app:1',
  env: {},
  ports: [],
  mounts: [],
  labels: { [Labels.manifestId]: 'pod', [Labels.containerName]: name },
  ...extra,
});

/**
 * Runs a sandbox of pod `pod` for the containers of a test and returns its id: every container is
 * made in one. Labelled as the agent would; `labels: {}` makes a foreign one.
 */
export async function podSandbox(
  runtime: ContainerRuntime,
  name = 'POD--pod--1',
  labels: Record<string, string> = { [Labels.sandbox]: 'pod' },
): Promise<string> {
  return (await runtime.runSandbox({ name, podId: 'pod', hostname: 'pod', ports: [], labels })).id;
}
