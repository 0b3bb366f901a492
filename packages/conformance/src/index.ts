export * from './runtime-contract.js';
export * from './runner-scenarios.js';
export * from './recording-sink.js';
export * from './reliability.js';
export * from './guarded-runtime.js';
export * from './fuzz/index.js';
export * from './manifest-fixture.js';
export { ManualClock, heldClock, type HeldTimer } from './manual-clock.js';
export type { PodNetworkCapability } from './pod-contract.js';
