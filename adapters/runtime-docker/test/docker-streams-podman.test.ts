import { assertPodman, independentPodman, podmanHost, removePodmanLabelled, TEST_IMAGES } from '@kubelet-ts/testkit';
import { streamingSuite } from './streaming-suite.js';

// The same adapter and checks on Podman's Docker-compatible API.
streamingSuite({
  name: 'podman',
  ready: async () => {
    await assertPodman();
    return TEST_IMAGES;
  },
  host: podmanHost(),
  client: () => independentPodman(),
  removeLabelled: (label) => removePodmanLabelled(label),
});
