export * from './docker-runtime.js';
export * from './docker-api.js';
export { translate as translateDockerError } from './errors.js';
