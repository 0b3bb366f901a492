export * from './engine.js';
export * from './images.js';
