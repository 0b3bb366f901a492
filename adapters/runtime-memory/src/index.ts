export {
  MemoryRuntime,
  registerMemoryRuntime,
  type ExecHandler,
  type Fault,
  type Latency,
  type MemoryRuntimeOptions,
  type RuntimeCall,
  type RuntimeOperation,
} from './memory-runtime.js';
export type { MemoryImages } from './memory-images.js';
export type { MemoryProgram, MemoryProgramIo, MemoryStreams } from './memory-streams.js';
export type { MemoryFigures, MemoryUse } from './memory-figures.js';
export { SeededRandom } from './seeded-random.js';
export { SeededFaultInjector, type SeededFaultInjectorOptions } from './seeded-fault-injector.js';
export { LostReplies } from './lost-replies.js';
