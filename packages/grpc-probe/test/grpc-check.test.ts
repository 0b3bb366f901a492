import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as grpc from '@grpc/grpc-js';
import { grpcHealthCheck, healthCheckRequest, servingStatusOf } from '../src/grpc-check.js';
import { socketNetworkCheck, type NetworkCheck } from '@kubelet-ts/runner';

/** The service a HealthCheckRequest names (what a server reads of it). */
function serviceOf(request: Buffer): string {
  if (request.length === 0) return '';
  expect(request[0]).toBe(0x0a);
  return request.subarray(2, 2 + request[1]!).toString('utf8');
}

/**
 * A real gRPC server (grpc-js, HTTP/2 over TCP) answering grpc.health.v1.Health/Check as a server
 * with the standard health service does: the server ('') SERVING, `down` NOT_SERVING, `slow` never,
 * any other service NOT_FOUND.
 */
async function healthServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = new grpc.Server();
  server.addService(
    {
      Check: {
        path: '/grpc.health.v1.Health/Check',
        requestStream: false,
        responseStream: false,
        requestSerialize: ({ service }: { service: string }) => healthCheckRequest(service),
        // An object, not the name: grpc-js takes a falsy request ('') for none.
        requestDeserialize: (b: Buffer) => ({ service: serviceOf(b) }),
        responseSerialize: (status: number) => Buffer.from([0x08, status]),
        responseDeserialize: servingStatusOf,
      },
    },
    {
      Check: (call: grpc.ServerUnaryCall<{ service: string }, number>, done: grpc.sendUnaryData<number>) => {
        const { service } = call.request;
        if (service === '') done(null, 1);
        else if (service === 'down') done(null, 2);
        else if (service !== 'slow') done({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return { port, close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) };
}

describe('the gRPC health check messages', () => {
  it('writes the service as field 1, nothing for the server as a whole', () => {
    expect(healthCheckRequest('')).toEqual(Buffer.alloc(0));
    expect(healthCheckRequest('db')).toEqual(Buffer.from([0x0a, 2, 0x64, 0x62]));
    // A name of 300 bytes has a two-byte length.
    expect(healthCheckRequest('x'.repeat(300)).subarray(0, 3)).toEqual(Buffer.from([0x0a, 0xac, 0x02]));
  });

  it('reads the status of field 1, skipping fields it does not know; absent is UNKNOWN', () => {
    expect(servingStatusOf(Buffer.from([0x08, 1]))).toBe(1);
    expect(servingStatusOf(Buffer.alloc(0))).toBe(0);
    expect(servingStatusOf(Buffer.from([0x12, 2, 0x61, 0x62, 0x08, 2, 0x18, 0x96, 0x01]))).toBe(2);
    expect(() => servingStatusOf(Buffer.from([0x08]))).toThrow('truncated');
    expect(() => servingStatusOf(Buffer.from([0x0b]))).toThrow('wire type 3');
  });
});

describe('grpcHealthCheck against a real gRPC server', () => {
  let server: Awaited<ReturnType<typeof healthServer>>;
  let bare: grpc.Server;
  let barePort = 0;
  let closedPort = 0;

  beforeAll(async () => {
    server = await healthServer();
    // A gRPC server with no health service: every call is UNIMPLEMENTED.
    bare = new grpc.Server();
    barePort = await new Promise<number>((resolve, reject) =>
      bare.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    // A port nothing listens on: one a server had, and gave back.
    const gone = await healthServer();
    closedPort = gone.port;
    await gone.close();
  });

  afterAll(async () => {
    await server.close();
    await new Promise<void>((resolve) => bare.tryShutdown(() => resolve()));
  });

  it('passes when the server answers SERVING (through the default network check with it, as the CLI hands the agent, too)', async () => {
    expect(await grpcHealthCheck('127.0.0.1', server.port, '', 2_000)).toEqual({ ok: true, detail: 'service healthy' });
    // The runner's own network check makes no gRPC calls: gRPC is what this package adds.
    expect(socketNetworkCheck.grpc).toBeUndefined();
    const network: NetworkCheck = { ...socketNetworkCheck, grpc: grpcHealthCheck };
    expect(await network.grpc?.('127.0.0.1', server.port, '', 2_000)).toEqual({ ok: true, detail: 'service healthy' });
  });

  it('fails, in the kubelet’s words, on NOT_SERVING, an unknown service, no health service, nothing listening, and no answer in time', async () => {
    expect(await grpcHealthCheck('127.0.0.1', server.port, 'down', 2_000)).toEqual({
      ok: false,
      detail: 'service unhealthy (responded with "NOT_SERVING")',
    });
    expect(await grpcHealthCheck('127.0.0.1', server.port, 'cache', 2_000)).toEqual({
      ok: false,
      detail: 'error: health rpc probe failed: unknown service (service "cache")',
    });
    expect((await grpcHealthCheck('127.0.0.1', barePort, '', 2_000)).detail).toMatch(
      /^this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\): /,
    );
    const refused = await grpcHealthCheck('127.0.0.1', closedPort, '', 2_000);
    expect(refused.ok).toBe(false);
    expect(refused.detail).toMatch(
      new RegExp(`^timeout: failed to connect service "127\\.0\\.0\\.1:${closedPort}" within 2s: .*ECONNREFUSED`),
    );
    const started = Date.now();
    expect(await grpcHealthCheck('127.0.0.1', server.port, 'slow', 300)).toEqual({
      ok: false,
      detail: 'timeout: health rpc did not complete within 0.3s',
    });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
