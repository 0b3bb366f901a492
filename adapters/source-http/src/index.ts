export {
  HttpManifestSource,
  parseHeaderFlag,
  registerHttpSource,
  type HttpManifestSourceOptions,
  type HttpSourceTlsOptions,
} from './http-source.js';
