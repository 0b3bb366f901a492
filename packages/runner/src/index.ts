// The embeddable agent's public API. Its parts (pod workers, executor, mux, supervisors, prober)
// are internal: an embedder builds an agent, hands it adapters, and reads it.
export { createKubelet, type Kubelet, type KubeletOptions, type KubeletStatus } from './kubelet.js';
export type { VolumeRoots } from './volume-figures.js';
export type { PassResult } from './sync-loop.js';
export type { SourceStatus } from './source-intake.js';
export {
  type CheckpointOwner,
  FileSourceCheckpoints,
  type FileSourceCheckpointsOptions,
  type SourceCheckpoints,
} from './source-checkpoints.js';
export type { Conflict, DesiredState } from './mux.js';
export { resolveKubelet, type KubeletSettings, type Resolver } from './di.js';
export { FanOutEventSink, LogEventSink } from './log-event-sink.js';
export { formatPlanReport, previewPlan, type PreviewOptions } from './preview.js';
export { socketNetworkCheck, type HttpCheckOptions, type NetworkCheck } from './network-check.js';
export { APPARMOR_ENABLED_PATH, hostEnforcesAppArmor } from './host-security.js';
