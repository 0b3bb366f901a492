export * from './file-source.js';
