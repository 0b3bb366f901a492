import { freePort } from './etcd-server.js';

/**
 * The pod network checks of `runtimeContract` (its `PodNetworkCapability`), with the busybox test
 * image: httpd serves, wget fetches.
 */
export const busyboxPodNetwork = {
  server: (port: number, reply: string): readonly string[] => [
    'sh',
    '-c',
    `mkdir -p /www && echo ${reply} > /www/index.html && exec httpd -f -p ${port} -h /www`,
  ],
  fetch: (port: number): readonly string[] => ['wget', '-q', '-O', '-', `http://127.0.0.1:${port}/`],
  hostPort: freePort,
};
