// The vocabulary every other package speaks, by name, and nothing else: core has no dependency and
// does no I/O. Each value here is used by another package, or is marked below as API for embedders.
// Helpers used only inside core stay internal: name escaping and its inverse, the pull-policy
// default, the manifest's sandbox hash, the container limit, and what the planner, the specs and the
// pod status compute on the way (a container's env and $(VAR) expansion, the services' variables,
// a volume's files, a pod's DNS, its pull credentials, requests, placement and QoS class, its
// identity labels, the safe sysctls): a runtime is handed their result in the spec, and an embedder
// calls plan(), buildContainerSpec() or derivePodStatus(). docs/api-reports/core.api.md is the list.
// Reading manifests from text is @kubelet-ts/manifest's; host directories are the runtime side's.

// Errors and events
export {
  KubeletError,
  formatFieldErrors,
  ignoreNotFound,
  isKubeletError,
  toKubeletError,
  type ErrorCode,
  type FieldError,
  type KubeletErrorOptions,
} from './errors.js';
export type { EventFilter, EventSink, KubeletEvent, KubeletEventType, RecordedEvent } from './events.js';
export { eventMatches } from './events.js';

// Manifests: their types, and the validation that makes one (the runner checks what embedders'
// sources hand it; describeValue and isRecord let the v1 decoder word its messages alike)
export {
  DEFAULT_GRACE_PERIOD_SECONDS, // API for embedders (see its doc comment)
  type Container,
  type ContainerManifest,
  type DesiredPod,
  type EnvVar,
  type EnvVarSource,
  type HostPathType,
  type ManifestVersion,
  type Port,
  type Probe,
  type Protocol,
  type PullPolicy,
  type RestartPolicy,
  type Volume,
  type VolumeMount,
  type VolumeFiles,
  type EmptyDir,
  type FileSource,
  type ServiceAccountTokenFile,
  type ObjectFiles,
  type DownwardFile,
  type ObjectKeyRef,
  type EnvFromSource,
  type NodeSelectorTerm,
  type NodeSelectorRequirement,
  type Lifecycle,
  type LifecycleHandler,
  type DnsPolicy,
  type PodDnsConfig,
} from './manifest.js';
// A pod's resolver: the host's resolv.conf read, and a pod's DNS settings merged with it
export { parseResolvConf, type ResolverConfig } from './dns.js';
// ConfigMaps and Secrets given beside pods, and what pods read of them
export {
  MASTER_SERVICE,
  NO_OBJECTS,
  SERVICE_LINKS,
  objectKey,
  objectLookupOf,
  referencedObjects,
  serviceAccountTokenName,
  serviceEnvironmentRefs,
  type ObjectKind,
  type ObjectLookup,
  type ObjectRef,
  type ServiceAccountTokenRequest,
  type SourceObject,
  type VolumeFile,
} from './objects.js';
export { OBJECT_KEY } from './validate-files.js';
export { PROBE_FIELD_NAMES } from './validate-probe.js';
export { isLabelKey, isLabelValue, nodeLabelsOf } from './validate-placement.js';
export {
  admissionRefusal,
  admittedUse,
  withPod,
  type AdmittedUse,
  type AdmissionNode,
  type AdmissionReason,
  type AdmissionRefusal,
  type NodeAllocatable,
  type PodRequests,
} from './admission.js';
export { podVolumeFiles, type PodVolumeFiles } from './create-step.js';
export {
  hostAccessOf,
  isValidatedManifest,
  validateManifest,
  type HostAccess,
  type ValidateOptions,
  type ValidationResult,
  type ValidationWarning,
} from './validate.js';
export { MAX_LIST_ENTRIES, describeValue, isRecord, type WrittenAs } from './field-checks.js';

// Contracts of the pluggable parts, and the helpers that keep adapters to them
export type {
  Capability,
  ContainerDetails,
  ContainerEvent,
  ContainerEventSource,
  ContainerRuntime,
  ContainerSpec,
  ContainerState,
  ContainerSummary,
  ExecResult,
  ImageRecord,
  ImageService,
  ListOptions,
  Mount,
  PortBinding,
  RuntimeCapabilities,
} from './runtime.js';
export { CAPABILITIES } from './runtime.js';
// Registry credentials of a pod's pull secrets, for the image services' pulls
export { pullCredentialKey, repositoryOf, type PodPullCredentials, type PullCredential } from './pull-credentials.js';
export type {
  ContainerStats,
  ContainerStatsSource,
  ContainerUsage,
  CpuUsage,
  FsStats,
  ImageFsUsage,
  InterfaceStats,
  MemoryStats,
  NodeUsage,
  PodUsage,
  ResourceUsage,
  SandboxStats,
  StatsRequest,
  StatsSample,
  VolumeUsage,
} from './resource-stats.js';
export { netDevInterfaces } from './resource-stats.js';
export {
  cutAtLimit,
  formatLogTime,
  logText,
  parseLogTime,
  readLogText,
  type ContainerLogSource,
  type LogLine,
  type LogReadOptions,
  type LogStream,
  type LogTextOptions,
} from './container-logs.js';
export type { ContainerStreaming, SessionEnd, StreamOptions, StreamSession, TerminalSize } from './container-streams.js';
export { SYSCTL_NAME, normalSysctlName, sysctlNamespace } from './sysctls.js';
export { wrapRuntime, type AroundCall, type RuntimeOperation, type RuntimeWrapping } from './wrap-runtime.js';
export { settledEvents, type SettleOptions } from './settle-events.js';
export type { ManifestSource, SourceSink, SourceWarning } from './source.js';
export { ChangeReporter } from './change-reporter.js';
export { SharedCalls } from './shared-calls.js';
export { silentLogger, type Logger } from './logger.js';
export { isLoopback } from './loopback.js';
export { Tokens, type Registry, type Token } from './tokens.js';

// Time
export { repeatEvery, sleep, systemClock, type Clock, type TimerHandle } from './clock.js';
export { Backoff, backoffDelay, type BackoffPolicy } from './backoff.js';

// Naming, labels and the specs the agent builds (runtime adapters' tests build theirs alike)
export {
  Labels,
  buildContainerName,
  derivedManifestId,
  identityOf,
  isDnsLabel,
  isManagedBy,
  isManifestId,
  nodeNameProblem,
  podNameOf,
  podKeyOf,
  type PodKey,
  type ContainerIdentity,
} from './naming.js';
export {
  CFS_PERIOD_US,
  buildContainerSpec,
  canonicalJson,
  cfsQuotaOf,
  cpuLimitMillisOf,
  specHash,
  specHashes,
  type SpecContext,
} from './spec.js';
export {
  ENV_RESOURCES,
  readsPodIP,
  type EnvResource,
  type NodeCapacity,
  type PodRuntimeFields,
} from './container-env.js';
export {
  containerSecurityOf,
  needsImageUser,
  runAsNonRootProblem,
  localhostSeccompProblem,
  withoutEngineDefaults,
  type ContainerSecurity,
  type ContainerSecurityContext,
  type PodSecurityContext,
  type SecurityProfile,
  type SELinuxOptions,
  type SharedSecurity,
  type Sysctl,
} from './security.js';
export {
  HOST_NETWORK_SANDBOX_HASH,
  buildSandboxSpec,
  podUid,
  isManagedSandbox,
  sandboxHash,
  type SandboxSpec,
  type SandboxState,
  type SandboxSummary,
} from './sandbox.js';

// Planning, and what the agent shows of itself
export { CrashBackOff, plan, type BackOff, type Plan, type PlanAction, type PlanInput, type PlanReason, type PodPlan } from './planner.js';
export { reportPlan, type PlannedStep, type PlanReport } from './plan-report.js';
export type {
  AgentView,
  ContainerLogRequest,
  ContainerTextRequest,
  ContainerTarget,
  PodTarget,
  ContainerView,
  EndedRun,
  HealthView,
  PodListing,
  PodView,
  SourceView,
  WaitingReason,
} from './agent-view.js';
export {
  derivePodStatus,
  rejectedPodStatus,
  podPhase,
  rfc3339,
  type PodCondition,
  type PodPhase,
  type PodStatus,
  type PodStatusNode,
  type QosClass,
} from './pod-status.js';
export type {
  V1Container,
  V1ContainerState,
  V1ContainerStateTerminated,
  V1ContainerStatus,
  V1EmptyDirVolumeSource,
  V1EnvVar,
  V1EnvVarSource,
  V1Event,
  V1ObjectMeta,
  V1Pod,
  V1PodCondition,
  V1PodList,
  V1PodSpec,
  V1PodStatus,
  V1Probe,
  V1ResourceFieldSelector,
  V1Volume,
  WatchEvent,
} from './v1-types.js';
