import { buildTestImages, independentDocker, removeLabelled } from '@kubelet-ts/testkit';
import { streamingSuite } from './streaming-suite.js';

streamingSuite({ name: 'docker', ready: buildTestImages, client: independentDocker, removeLabelled });
