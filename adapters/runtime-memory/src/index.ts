export * from './memory-runtime.js';
export * from './manual-clock.js';
