// What adapter authors and the agent's tests use, by name.

// The contracts every adapter runs
export { runtimeContract, type RuntimeContractOptions } from './runtime-contract.js';
export type { TestApi, TestApiOption } from './test-api.js';
export type { PodNetworkCapability } from './pod-contract.js';
export type { EventsCapability } from './events-contract.js';
export type { LogsCapability } from './logs-contract.js';
export type { StreamingCapability } from './streaming-contract.js';
export type { StatsCapability } from './stats-contract.js';
export type { PrivateImage, PullSecretsCapability } from './pull-secrets-contract.js';
export { runnerScenarios, type RunnerScenarioOptions, type ScenarioAgent } from './runner-scenarios.js';
export {
  sourceFuzzContract,
  type DocumentFuzzHarness,
  type RequestFuzzHarness,
  type SourceFuzzHarness,
  type SourceFuzzOptions,
} from './fuzz/source-fuzz-contract.js';

// Generators, for fuzzing of one's own
export { validManifest, type ManifestInput, type ValidManifestOptions } from './fuzz/valid-manifests.js';
export { invalidManifest, type InvalidManifest } from './fuzz/mutations.js';
export { randomText, unreadableText, type UnreadableText } from './fuzz/unreadable.js';
export { documentStyle, renderDocument, renderYaml, type DocumentStyle } from './fuzz/render.js';
export { describeFuzzInput, fuzzBytes, fuzzInput, type FuzzInput } from './fuzz/cases.js';
export { heapUsedMB } from './fuzz/memory.js';

// Test helpers
export { GuardedRuntime, type ContainerCall, type ContainerOperation } from './guarded-runtime.js';
export { ManualClock, heldClock, type HeldTimer } from './manual-clock.js';
export { RecordingSink } from './recording-sink.js';
export { RecordingLogger, type LogEntry } from './recording-logger.js';
export { checkedManifest, objectDocuments } from './manifest-fixture.js';
export { isLongRun, recordFigures, reliabilityRuns, reliabilitySeed, type ReliabilityCounts } from './reliability.js';
