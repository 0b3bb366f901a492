import { describe, expect, it } from '@jest/globals';
import { isKubeletError } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { toV1Pod } from '../src/v1/to-v1.js';
import { toV1beta1 } from '../src/v1/to-v1beta1.js';
import { accepted, app, pod, refused } from './v1-pod-fixture.js';

describe('v1 Pod: stdin, stdinOnce and tty', () => {
  it('reads them (false is as absent), writes them back as v1; v1beta1 has no form for them', () => {
    const m = accepted(pod({ command: ['sh'], stdin: true, stdinOnce: true, tty: true }));
    expect(app(m)).toMatchObject({ stdin: true, stdinOnce: true, tty: true });
    expect(accepted(pod({ stdin: false, tty: false }))).toEqual(accepted(pod()));
    expect(parseManifests(JSON.stringify(toV1Pod(m)), 'again.json').manifests[0]).toEqual(m);
    try {
      toV1beta1(m);
      throw new Error('converted');
    } catch (error) {
      expect(isKubeletError(error) && error.fieldErrors.map((e) => e.path)).toEqual(
        expect.arrayContaining(['spec.containers[0].stdin', 'spec.containers[0].stdinOnce', 'spec.containers[0].tty']),
      );
    }
  });

  it('refuses a value that is not true or false, by its path', () => {
    expect(refused(pod({ tty: 'yes' }))).toEqual([{ path: 'spec.containers[0].tty', message: 'must be true or false, got string "yes"' }]);
  });
});
