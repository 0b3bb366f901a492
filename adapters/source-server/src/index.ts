export { ServerManifestSource, registerServerSource, type ServerManifestSourceOptions } from './server-source.js';
export { agentApiHandler, agentApiListener, type AgentApiListenerOptions } from './agent-api.js';
export { renderPodList, renderPodListJson, type V1PodList } from './pod-list.js';
export { PROMETHEUS_TEXT, renderResourceMetrics, renderSummary } from './resource-figures.js';
export { DEFAULT_HOST_LOG_DIRECTORY, hostLogsHandler, type HostLogsOptions } from './host-logs.js';
export type { RouteAnswer, RouteHandler, StreamedAnswer, UpgradeHandler } from './route-handler.js';
export { AuthThrottle, type AuthThrottleOptions } from './auth-throttle.js';
export type { ServerTlsOptions } from './server-tls.js';
