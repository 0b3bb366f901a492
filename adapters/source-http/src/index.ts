export * from './http-source.js';
