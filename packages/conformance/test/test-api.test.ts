import * as jestGlobals from '@jest/globals';
import { describe, expect, it } from '@jest/globals';
import type { TestApi } from '../src/index.js';
import { resolveTestApi } from '../src/test-api.js';

describe('the test functions a contract runs with', () => {
  it("are the ones given, and jest's own fit TestApi as they are", () => {
    const given: TestApi = jestGlobals;
    expect(resolveTestApi(given, 'contract')).toBe(given);
  });

  it('are taken from the globals jest injects, when none are given (every call site before vitest)', () => {
    const api = resolveTestApi(undefined, 'contract');
    const globals = globalThis as unknown as Record<string, unknown>;
    for (const name of ['describe', 'it', 'expect', 'beforeAll', 'afterAll', 'afterEach'] as const) expect(api[name]).toBe(globals[name]);
  });

  it('say what is missing and how to pass them, where the runner set no globals', () => {
    expect(() => resolveTestApi(undefined, "runtimeContract('x')", { describe: () => undefined })).toThrow(
      "runtimeContract('x'): no test functions (it, expect, beforeAll, afterAll, afterEach not global)",
    );
    expect(() => resolveTestApi(undefined, 'c', {})).toThrow(/\{ testApi: vitest \}.*globals: true/);
  });
});
