export * from './engine.js';
export * from './images.js';
export * from './etcd-server.js';
export * from './engine-restart.js';
export * from './tcp-gate.js';
export * from './containerd.js';
