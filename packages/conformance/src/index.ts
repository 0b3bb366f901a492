export * from './runtime-contract.js';
