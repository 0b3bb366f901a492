export * from './engine.js';
export * from './images.js';
export * from './etcd-server.js';
