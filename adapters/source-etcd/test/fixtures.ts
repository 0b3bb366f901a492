/** What the etcd source's tests write to etcd, and the hosts they write it for. */

/** A 2014 manifest of one container. */
export const manifest = (id: string, image = 'app:1') => ({ version: 'v1beta1', id, containers: [{ name: 'main', image }] });
/** The value of a host's key: its manifests as a JSON list. */
export const list = (...manifests: object[]) => JSON.stringify(manifests);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let hosts = 0;
/** A hostname of its own per test, so that tests sharing an etcd never share a key. */
export const nextHost = () => `node-${++hosts}`;
