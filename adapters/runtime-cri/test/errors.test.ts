import { describe, expect, it } from '@jest/globals';
import { KubeletError, type ErrorCode } from '@kubelet-ts/core';
import { CriRuntime, type CriApi } from '../src/index.js';
import { millis } from '../src/mapping.js';

/** A CRI that fails every call with `error` (grpc-js's ServiceError shape: code, details). */
function failing(error: { code: number; details: string }): CriApi {
  const fail = () => Promise.reject(Object.assign(new Error(`${error.code} ${error.details}`), error));
  return new Proxy({} as CriApi, { get: (_, key) => (key === 'close' ? () => undefined : fail) });
}

const runtimeFailing = (code: number, details: string) =>
  new CriRuntime({ cri: failing({ code, details }), endpoint: 'unix:///run/test/cri.sock' });

async function errorOf(call: Promise<unknown>): Promise<KubeletError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(KubeletError);
  return error as KubeletError;
}

describe('CRI failures become the core codes, with the cause kept', () => {
  it.each<[string, number, string, ErrorCode]>([
    ['NOT_FOUND', 5, 'an error occurred when try to find container "x": not found', 'NotFound'],
    ['ALREADY_EXISTS', 6, 'exists', 'Conflict'],
    ['FAILED_PRECONDITION', 9, 'container is not running', 'Conflict'],
    ['DEADLINE_EXCEEDED', 4, 'context deadline exceeded', 'Timeout'],
    ['UNAVAILABLE', 14, 'No connection established', 'Unavailable'],
    ['UNIMPLEMENTED (no CRI plugin)', 12, 'unknown service runtime.v1.RuntimeService', 'Unavailable'],
    [
      'a name containerd has reserved (UNKNOWN, in words)',
      2,
      'failed to reserve container name "a_b_c_0": name "a_b_c_0" is reserved for "123"',
      'Conflict',
    ],
    ['a port in use (UNKNOWN, in words)', 2, 'listen tcp 0.0.0.0:80: bind: address already in use', 'Conflict'],
    ['anything else', 2, 'something broke', 'Internal'],
  ])('%s', async (_, code, details, expected) => {
    const error = await errorOf(runtimeFailing(code, details).inspect('abc'));
    expect(error.code).toBe(expected);
    expect(error.adapter).toBe('cri');
    expect((error.cause as { code: number }).code).toBe(code);
    expect(error.message).toContain('inspect abc');
  });

  it('says which socket does not answer and how to start containerd', async () => {
    const error = await errorOf(runtimeFailing(14, 'No connection established. Last error: connect ENOENT /run/test/cri.sock').list());
    expect(error.message).toContain('unix:///run/test/cri.sock');
    expect(error.message).toContain('scripts/containerd.sh start');
    expect(error.message).toContain('--container-runtime-endpoint');
  });

  it('says that a containerd without its CRI plugin (as Docker runs it) does not serve CRI', async () => {
    const error = await errorOf(runtimeFailing(12, 'unknown service runtime.v1.RuntimeService').listSandboxes());
    expect(error.message).toMatch(/does not serve CRI runtime\.v1.*"cri" plugin/);
  });

  it('sorts pull failures: no such image, no registry reachable, no runtime', async () => {
    const pulling = (code: number, details: string) => {
      const cri = failing({ code, details });
      // The image is not there; the pull itself fails.
      return new CriRuntime({
        cri: { ...cri, imageStatus: () => Promise.resolve({ image: null }), pullImage: cri.pullImage, close: () => undefined } as CriApi,
      });
    };
    expect((await errorOf(pulling(2, 'failed to resolve reference "x": docker.io/library/x:1: not found').images.pull('x:1'))).code).toBe(
      'NotFound',
    );
    const unreachable = await errorOf(
      pulling(
        2,
        'failed to do request: Head "https://kubelet-ts.invalid/v2/": dial tcp: lookup kubelet-ts.invalid: no such host',
      ).images.pull('kubelet-ts.invalid/x:1'),
    );
    expect(unreachable.code).toBe('Unavailable');
    expect(unreachable.message).toContain('ctr -n k8s.io images import');
    expect((await errorOf(pulling(14, 'No connection established').images.pull('x:1'))).code).toBe('Unavailable');
  });

  it('shares one pull per image between concurrent callers', async () => {
    let pulls = 0;
    let release: () => void = () => undefined;
    const cri = {
      imageStatus: () => Promise.resolve({ image: null }),
      pullImage: () => {
        pulls++;
        return new Promise((resolve) => (release = () => resolve({ imageRef: 'sha256:1' })));
      },
      close: () => undefined,
    } as unknown as CriApi;
    const runtime = new CriRuntime({ cri });
    const both = Promise.all([runtime.images.pull('a:1'), runtime.images.pull('a:1')]);
    await new Promise((r) => setImmediate(r));
    release();
    await both;
    expect(pulls).toBe(1);
  });

  it('does not pull an image the runtime has (an imported one is in no registry)', async () => {
    let pulls = 0;
    const cri = {
      imageStatus: () => Promise.resolve({ image: { id: 'sha256:1', repoTags: ['docker.io/library/a:1'], repoDigests: [], size: '1' } }),
      pullImage: () => {
        pulls++;
        return Promise.reject(new Error('no registry'));
      },
      close: () => undefined,
    } as unknown as CriApi;
    await new CriRuntime({ cri }).images.pull('a:1');
    expect(pulls).toBe(0);
  });
});

describe('CRI times', () => {
  it('are nanoseconds as text; 0 is "not set"', () => {
    expect(millis('1796283882322267640')).toBe(1796283882322);
    expect(millis('0')).toBeUndefined();
    expect(millis(undefined)).toBeUndefined();
  });
});
