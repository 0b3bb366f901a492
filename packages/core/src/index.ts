// The vocabulary every other package speaks, by name. Helpers used only inside core (name
// escaping's inverse, the pull-policy default, error formatting, validation limits) stay internal.

// Errors and events
export { KubeletError, formatFieldErrors, isKubeletError, toKubeletError, type ErrorCode, type FieldError, type KubeletErrorOptions } from './errors.js';
export type { EventSink, KubeletEvent, KubeletEventType } from './events.js';

// Manifests: their types and validation
export {
  DEFAULT_GRACE_PERIOD_SECONDS,
  type Container,
  type ContainerManifest,
  type DesiredPod,
  type EnvVar,
  type ManifestVersion,
  type Port,
  type HostPathType,
  type Probe,
  type Protocol,
  type PullPolicy,
  type RestartPolicy,
  type Volume,
  type VolumeMount,
} from './manifest.js';
export { MAX_CONTAINERS, isValidatedManifest, validateManifest, type ValidateOptions, type ValidationResult, type ValidationWarning } from './validate.js';
export { MAX_LIST_ENTRIES, describeValue, isRecord, type WrittenAs } from './field-checks.js';

// Contracts of the pluggable parts
export { CAPABILITIES } from './runtime.js';
export { wrapRuntime, type AroundCall, type RuntimeOperation, type RuntimeWrapping } from './wrap-runtime.js';
export { settledEvents, type SettleOptions } from './settle-events.js';
export type {
  Capability,
  ContainerDetails,
  ContainerEvent,
  ContainerEventSource,
  ContainerRuntime,
  ContainerStats,
  ContainerStatsSource,
  ContainerSpec,
  ContainerState,
  ContainerSummary,
  ExecResult,
  ListOptions,
  Mount,
  RuntimeCapabilities,
  PortBinding,
} from './runtime.js';
export type { ManifestSource, SourceSink, SourceWarning } from './source.js';
export { ChangeReporter } from './change-reporter.js';
export { silentLogger, type Logger } from './logger.js';
export { Tokens, type Registry, type Token } from './tokens.js';

// Time
export { repeatEvery, sleep, systemClock, type Clock, type TimerHandle } from './clock.js';
export { Backoff, backoffDelay, type BackoffPolicy } from './backoff.js';

// Naming, labels and container specs
export {
  Labels,
  buildContainerName,
  derivedManifestId,
  escapeNamePart,
  identityOf,
  isDnsLabel,
  isManagedBy,
  isManifestId,
  nodeNameProblem,
  type ContainerIdentity,
} from './naming.js';
export { CFS_PERIOD_US, buildContainerSpec, canonicalJson, cfsQuotaOf, cpuLimitMillisOf, specHash, specHashes, type SpecContext } from './spec.js';
export { HOST_NETWORK_SANDBOX_HASH, buildSandboxSpec, isManagedSandbox, manifestSandboxHash, sandboxHash, type SandboxSpec, type SandboxState, type SandboxSummary } from './sandbox.js';

// Planning, and what the agent shows of itself
export { CrashBackOff, plan, type BackOff, type Plan, type PlanAction, type PlanInput, type PlanReason, type PodPlan } from './planner.js';
export { reportPlan, type PlannedStep, type PlanReport } from './plan-report.js';
export type { AgentView, ContainerView, EndedRun, HealthView, PodListing, PodView, WaitingReason } from './agent-view.js';
