import { describe, expect, it } from '@jest/globals';
import { KubeletError, ignoreNotFound, isLoopback } from '../src/index.js';

describe('isLoopback', () => {
  it('is localhost, 127.0.0.0/8 and ::1 in any spelling', () => {
    for (const address of ['localhost', '127.0.0.1', '127.8.9.10', '::1', '0:0::1', '0000:0000:0000:0000:0000:0000:0000:0001', '::1%lo'])
      expect([address, isLoopback(address)]).toEqual([address, true]);
  });

  it('is not a machine address, a wildcard, or a name other than localhost', () => {
    for (const address of ['10.0.0.1', '0.0.0.0', '::', 'fe80::1', 'node-1.example', '::2'])
      expect([address, isLoopback(address)]).toEqual([address, false]);
  });
});

describe('ignoreNotFound', () => {
  it('gives what the call gives, undefined for NotFound, and rethrows anything else', async () => {
    expect(await ignoreNotFound(Promise.resolve(3))).toBe(3);
    expect(await ignoreNotFound(Promise.reject(new KubeletError('NotFound', 'no such container')))).toBeUndefined();
    const conflict = new KubeletError('Conflict', 'running');
    await expect(ignoreNotFound(Promise.reject(conflict))).rejects.toBe(conflict);
  });
});
