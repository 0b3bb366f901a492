export {
  CriRuntime,
  DEFAULT_CRI_ENDPOINT,
  DEFAULT_LOGS_ROOT,
  DEFAULT_VOLUMES_ROOT,
  registerCriRuntime,
  type CriRuntimeOptions,
} from './cri-runtime.js';
export { CriAnnotations } from './mapping.js';
export { CRI_NAMESPACE } from './sandbox-config.js';
// The structural slice of CRI v1 a caller may hand in (`options.cri`); the gRPC client stays internal.
export type { CriApi } from './cri-api.js';
