export * from './valid-manifests.js';
export * from './mutations.js';
export * from './unreadable.js';
export * from './render.js';
export * from './cases.js';
export * from './memory.js';
export * from './source-fuzz-contract.js';
