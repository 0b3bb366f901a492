export { FileManifestSource, isManifestFileName, registerFileSource, type FileManifestSourceOptions } from './file-source.js';
