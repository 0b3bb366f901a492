/**
 * The test functions the contract suites call, so that they run under jest and under vitest alike.
 * Structural on purpose: jest's and vitest's own functions both fit, and neither runner is a
 * dependency of this package (an adapter author installs only the one they use).
 */

/** A test or hook body; both runners await what it returns. */
export type TestBody = () => void | Promise<unknown>;

export interface TestApiDescribe {
  (name: string, body: () => void): void;
}

export interface TestApiIt {
  /** `timeout` in ms, as the third argument (both runners take it there). */
  (name: string, body: TestBody, timeout?: number): void;
  skip(name: string, body: TestBody): void;
}

export type TestApiHook = (body: TestBody, timeout?: number) => void;

/** The matchers the suites use: each exists, with the same meaning, in jest's and vitest's `expect`. */
export interface TestMatchers<R> {
  toBe(expected: unknown): R;
  toEqual(expected: unknown): R;
  toMatchObject(expected: object): R;
  toContain(expected: unknown): R;
  toContainEqual(expected: unknown): R;
  toBeDefined(): R;
  toBeUndefined(): R;
  toBeInstanceOf(expected: unknown): R;
  toBeLessThan(expected: number): R;
  toBeLessThanOrEqual(expected: number): R;
  toBeGreaterThan(expected: number): R;
  toBeGreaterThanOrEqual(expected: number): R;
  toHaveLength(expected: number): R;
}

/** Matchers with `.not` (one level: jest's `.not` has no `.not` of its own). */
export type TestAssertion<R> = TestMatchers<R> & { readonly not: TestMatchers<R> };

export interface TestApiExpect {
  (
    actual: unknown,
  ): TestAssertion<void> & {
    readonly resolves: TestAssertion<Promise<void>>;
    readonly rejects: TestAssertion<Promise<void>>;
  };
}

/**
 * What a contract needs of a test runner. `import * as vitest from 'vitest'` fits as it is, as does
 * `import * as jest from '@jest/globals'`.
 */
export interface TestApi {
  readonly describe: TestApiDescribe;
  readonly it: TestApiIt;
  readonly expect: TestApiExpect;
  readonly beforeAll: TestApiHook;
  readonly afterAll: TestApiHook;
  readonly afterEach: TestApiHook;
}

/** The option every contract takes. */
export interface TestApiOption {
  /**
   * The runner's test functions, e.g. `testApi: vitest` after `import * as vitest from 'vitest'`.
   * Without it the contract takes them from the globals: jest injects them (unless `injectGlobals` is
   * off); vitest does with `globals: true`.
   */
  readonly testApi?: TestApi | undefined;
}

const NAMES = ['describe', 'it', 'expect', 'beforeAll', 'afterAll', 'afterEach'] as const;

/**
 * `given`, or the runner's globals. Read when a contract is called (inside a test file, where the
 * runner has set them), never when this module loads. `contract` names the caller in the error.
 */
export function resolveTestApi(given: TestApi | undefined, contract: string, scope: object = globalThis): TestApi {
  if (given !== undefined) return given;
  const globals = scope as Record<string, unknown>;
  const missing = NAMES.filter((n) => typeof globals[n] !== 'function');
  if (missing.length > 0) {
    throw new Error(
      `${contract}: no test functions (${missing.join(', ')} not global). Pass them, e.g. ` +
        "`import * as vitest from 'vitest'` and `{ testApi: vitest }`, or run with globals " +
        '(vitest: `globals: true`; jest: `injectGlobals` on, its default).',
    );
  }
  return Object.fromEntries(NAMES.map((n) => [n, globals[n]])) as unknown as TestApi;
}
