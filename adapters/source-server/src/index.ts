export * from './server-source.js';
