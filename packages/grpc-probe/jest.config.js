export { default } from '../../jest.config.base.js';
