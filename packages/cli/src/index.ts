export { main } from './main.js';
export { parseDuration } from './duration.js';
export { createLogger, type LoggerOptions } from './logging.js';
