export * from './memory-runtime.js';
export * from './manual-clock.js';
export * from './seeded-random.js';
export * from './seeded-fault-injector.js';
export * from './lost-replies.js';
