export {
  DEFAULT_POD_INFRA_IMAGE,
  DEFAULT_VOLUMES_ROOT,
  DockerRuntime,
  registerDockerRuntime,
  type DockerRuntimeOptions,
} from './docker-runtime.js';
// The structural slice of the Engine API a caller may hand in (`options.docker`); dockerode stays internal.
export type { DockerApi } from './docker-api.js';
