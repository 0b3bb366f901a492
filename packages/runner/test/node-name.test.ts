import { describe, expect, it } from '@jest/globals';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { Kubelet } from '../src/kubelet.js';

describe('the node name', () => {
  // It labels every container and names the node's etcd key: `a/b` or `..` would reach another host's.
  it.each(['../other-host', 'a/b', 'node_a', 'node a', 'node\n'])('refuses hostname %j before anything starts', (hostname) => {
    expect(() => new Kubelet({ runtime: new MemoryRuntime(), sources: [], hostname })).toThrow(/invalid hostname .*--hostname-override/);
  });

  it('takes a DNS name, lower-cased', () => {
    expect(new Kubelet({ runtime: new MemoryRuntime(), sources: [], hostname: 'Node-A.example.com' }).hostname).toBe('node-a.example.com');
  });
});
