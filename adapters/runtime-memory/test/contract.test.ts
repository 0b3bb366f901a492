import { runtimeContract } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '../src/index.js';

const PRIVATE = { image: 'registry.example.com/team/private:1', username: 'alice', password: 's3cret' };

runtimeContract(
  'memory',
  () =>
    new MemoryRuntime({
      images: ['busybox:1.36'],
      pullable: [],
      privateImages: { [PRIVATE.image]: { username: PRIVATE.username, password: PRIVATE.password } },
    }),
  {
    image: 'busybox:1.36',
    command: ['sleep', '3600'],
    realExec: false,
    // Its containers run nothing: the kill is the test control.
    events: { kill: async (runtime, id) => (runtime as MemoryRuntime).exit(id, 3) },
    // Nor print: what they print is the test's to say.
    logs: { print: async (runtime, id, stream, text) => (runtime as MemoryRuntime).print(id, stream, text) },
    // Its programs are a table of the busybox commands the contract runs; attach sees what it prints.
    streaming: { print: async (runtime, id, stream, text) => (runtime as MemoryRuntime).print(id, stream, text) },
    // Nor use anything: what they use is the test's to set.
    stats: { simulate: (runtime, id, use) => (runtime as MemoryRuntime).setStats(id, use) },
    // Its registry is a table of the images only given credentials may pull.
    pullSecrets: { privateImage: async () => ({ ...PRIVATE, close: async () => undefined }) },
  },
);
