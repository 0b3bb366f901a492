/**
 * The kubelet's gRPC probe (`pkg/probe/grpc`): `grpc.health.v1.Health/Check` of a service over
 * plaintext, a new channel each time, passing when the answer is `SERVING`. The two messages are
 * one field each, written and read here; `@grpc/grpc-js` (loaded on the first gRPC probe) speaks
 * HTTP/2 and gRPC.
 *
 * A package of its own, handed to the agent as its network check's `grpc` (the runner's
 * `NetworkCheck`): the runner installs no gRPC library, so an agent embedded with the in-memory
 * runtime stays small, and the CLI, which hands this in, keeps the kubelet's gRPC probe.
 */

const CHECK = '/grpc.health.v1.Health/Check';
/** `grpc.health.v1.HealthCheckResponse.ServingStatus`, by number. */
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];
const SERVING = 1;

/** `HealthCheckRequest { string service = 1; }`: the field left out when empty, as protobuf writes it. */
export function healthCheckRequest(service: string): Buffer {
  const name = Buffer.from(service, 'utf8');
  return name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a]), varint(name.length), name]);
}

/** `HealthCheckResponse { ServingStatus status = 1; }`: the status (0, UNKNOWN, when absent); other fields skipped. */
export function servingStatusOf(message: Buffer): number {
  let status = 0;
  let at = 0;
  const read = (): number => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= message.length || shift > 28) throw new Error('a truncated varint');
      const byte = message[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < message.length) {
    const tag = read();
    const wire = tag & 7;
    if (tag >>> 3 === 1 && wire === 0) status = read();
    else if (wire === 0) read();
    else if (wire === 1) at += 8;
    else if (wire === 2) {
      const length = read();
      at += length;
    } else if (wire === 5) at += 4;
    else throw new Error(`wire type ${wire} in a HealthCheckResponse`);
  }
  if (at > message.length) throw new Error('a truncated field');
  return status;
}

function varint(n: number): Buffer {
  const bytes: number[] = [];
  for (let v = n; ; v = Math.floor(v / 128)) {
    if (v < 128) {
      bytes.push(v);
      return Buffer.from(bytes);
    }
    bytes.push((v % 128) | 0x80);
  }
}

/** The health of `service` ('' for the server) at `host:port`, within `timeoutMs`; never rejects. */
export async function grpcHealthCheck(
  host: string,
  port: number,
  service: string,
  timeoutMs: number,
): Promise<{ ok: boolean; detail: string }> {
  const grpc = await import('@grpc/grpc-js');
  const target = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  // A channel of its own (no shared subchannel), closed after the one call: nothing stays open.
  const client = new grpc.Client(target, grpc.credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
    'grpc.primary_user_agent': 'kubelet-ts-probe',
  });
  try {
    const status = await new Promise<number>((resolve, reject) =>
      client.makeUnaryRequest(
        CHECK,
        (request: string) => healthCheckRequest(request),
        servingStatusOf,
        service,
        { deadline: Date.now() + timeoutMs },
        (error, answer) => (error ? reject(error) : resolve(answer ?? 0)),
      ),
    );
    if (status === SERVING) return { ok: true, detail: 'service healthy' };
    return { ok: false, detail: `service unhealthy (responded with "${SERVING_STATUS[status] ?? status}")` };
  } catch (error) {
    return {
      ok: false,
      detail: failureOf(error as { code?: number; details?: string; message?: string }, service, target, timeoutMs, grpc.status),
    };
  } finally {
    client.close();
  }
}

/** What the kubelet's gRPC probe says of a call that failed. */
function failureOf(
  error: { code?: number; details?: string; message?: string },
  service: string,
  target: string,
  timeoutMs: number,
  codes: typeof import('@grpc/grpc-js').status,
): string {
  // grpc-js ends a connection failure with an empty "Resolution note: ".
  const said = (error.details ?? error.message ?? String(error)).replace(/\s*Resolution note:\s*$/, '');
  if (error.code === codes.UNIMPLEMENTED) return `this server does not implement the grpc health protocol (grpc.health.v1.Health): ${said}`;
  if (error.code === codes.DEADLINE_EXCEEDED) return `timeout: health rpc did not complete within ${timeoutMs / 1000}s`;
  if (error.code === codes.UNAVAILABLE) return `timeout: failed to connect service "${target}" within ${timeoutMs / 1000}s: ${said}`;
  return `error: health rpc probe failed: ${said}${service === '' ? '' : ` (service "${service}")`}`;
}
