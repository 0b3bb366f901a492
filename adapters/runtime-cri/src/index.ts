export { CriRuntime, registerCriRuntime } from './cri-runtime.js';
export {
  DEFAULT_CRI_ENDPOINT,
  DEFAULT_LOG_LINKS_DIR,
  DEFAULT_LOGS_ROOT,
  DEFAULT_VOLUMES_ROOT,
  type CriRuntimeOptions,
} from './cri-options.js';
export type { LogRotationPolicy } from './cri-log-rotation.js';
export { CriAnnotations } from './mapping.js';
export { CRI_NAMESPACE } from './sandbox-config.js';
// The structural slice of CRI v1 a caller may hand in (`options.cri`); the gRPC client stays internal.
export type { CriApi } from './cri-api.js';
