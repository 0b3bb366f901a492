import * as vitest from 'vitest';
import { runtimeContract } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '../src/index.js';

// The contract of contract.test.ts under vitest, as an adapter author who uses vitest runs it: with
// vitest's test functions handed over (contract-globals.vitest.ts relies on `globals: true` instead).
runtimeContract('memory under vitest', () => new MemoryRuntime({ images: ['busybox:1.36'], pullable: [] }), {
  image: 'busybox:1.36',
  command: ['sleep', '3600'],
  realExec: false,
  events: { kill: async (runtime, id) => (runtime as MemoryRuntime).exit(id, 3) },
  logs: { print: async (runtime, id, stream, text) => (runtime as MemoryRuntime).print(id, stream, text) },
  streaming: { print: async (runtime, id, stream, text) => (runtime as MemoryRuntime).print(id, stream, text) },
  // Nor use anything: what they use is the test's to set.
  stats: { simulate: (runtime, id, use) => (runtime as MemoryRuntime).setStats(id, use) },
  testApi: vitest,
});
