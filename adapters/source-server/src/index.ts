export { ServerManifestSource, registerServerSource, type ServerManifestSourceOptions } from './server-source.js';
export { agentApiHandler, agentApiListener, type AgentApiListenerOptions, type AgentApiOptions } from './agent-api.js';
export { renderPodList, renderPodListJson, renderedPods, type RenderedPod, type V1PodList } from './pod-list.js';
export {
  POD_COLUMNS,
  TABLE_MEDIA_TYPE,
  humanDuration,
  podCells,
  podSummary,
  since,
  type PodSummary,
  type PrintedPod,
  type TableColumn,
} from './pod-printing.js';
export { asksForTable, renderPodTableJson, type IncludeObject } from './pod-table.js';
export { PROMETHEUS_TEXT, renderResourceMetrics, renderSummary } from './resource-figures.js';
export { DEFAULT_HOST_LOG_DIRECTORY, hostLogsHandler, type HostLogsOptions } from './host-logs.js';
export type { RouteAnswer, RouteHandler, StreamedAnswer, UpgradeHandler } from './route-handler.js';
export { AuthThrottle, type AuthThrottleOptions } from './auth-throttle.js';
export type { ServerTlsOptions } from './server-tls.js';
export {
  AUTH_TOKEN_USER,
  nodeRequestAttributes,
  type AuthorizationDecision,
  type DelegatedAuth,
  type NodeRequestAttributes,
  type RequestUser,
} from './request-auth.js';
