import { Labels, type ContainerSpec } from '@kubelet-ts/core';

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
