import { runnerScenarios } from '@kubelet-ts/conformance';
import { createKubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';

runnerScenarios('memory', {
  makeRuntime: () => new MemoryRuntime(),
  makeAgent: (parts) => createKubelet(parts),
  image: 'busybox:1.36',
  command: ['sleep', '3600'],
});
