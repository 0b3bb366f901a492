export { HttpManifestSource, parseHeaderFlag, registerHttpSource, type HttpManifestSourceOptions } from './http-source.js';
