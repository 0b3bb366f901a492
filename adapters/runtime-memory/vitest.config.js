import { defineConfig } from 'vitest/config';

/**
 * The conformance kit under vitest (issue 21): the runtime contract once with vitest's test
 * functions passed to it, once finding them as globals. Jest runs the *.test.ts files; vitest only these.
 */
export default defineConfig({
  test: {
    // As jest.config.base.js (vitest's default is 5 s).
    testTimeout: 20_000,
    projects: [
      { extends: true, test: { name: 'passed', include: ['test/contract.vitest.ts'] } },
      { extends: true, test: { name: 'globals', include: ['test/contract-globals.vitest.ts'], globals: true } },
    ],
  },
});
