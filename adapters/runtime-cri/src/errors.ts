import { KubeletError, type ErrorCode } from '@kubelet-ts/core';
import { GrpcCode, type CriCallError } from './cri-api.js';

export const ADAPTER = 'cri';

/** The runtime's own words for a failure (grpc-js puts them in `details`). */
export function criDetail(error: unknown): string {
  const e = (error ?? {}) as CriCallError;
  return e.details || e.message || String(error);
}

export function grpcCodeOf(error: unknown): number | undefined {
  const code = (error as CriCallError | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/**
 * Translates a failed CRI call into the core's codes, keeping it as the cause:
 * NOT_FOUND → NotFound; ALREADY_EXISTS and FAILED_PRECONDITION → Conflict; UNAVAILABLE (no socket,
 * nothing listening) → Unavailable, saying where and how to start a runtime; UNIMPLEMENTED (a
 * containerd without its CRI plugin, as Docker's own) → Unavailable, saying so; DEADLINE_EXCEEDED →
 * Timeout. containerd 1.6 answers a name already reserved and a port already held with UNKNOWN
 * and words only: those are read here, the one place that knows the vendor's phrasing.
 */
export function translate(error: unknown, what: string, endpoint: string): KubeletError {
  if (error instanceof KubeletError) return error;
  const detail = criDetail(error);
  switch (grpcCodeOf(error)) {
    case GrpcCode.NOT_FOUND:
      return new KubeletError('NotFound', `${what}: ${detail}`, { adapter: ADAPTER, cause: error });
    case GrpcCode.ALREADY_EXISTS:
    case GrpcCode.FAILED_PRECONDITION:
      return new KubeletError('Conflict', `${what}: ${detail}`, { adapter: ADAPTER, cause: error });
    case GrpcCode.DEADLINE_EXCEEDED:
      return new KubeletError('Timeout', `${what}: no answer in time from the CRI runtime at ${endpoint} (${detail})`, {
        adapter: ADAPTER,
        cause: error,
      });
    case GrpcCode.UNAVAILABLE:
      return new KubeletError(
        'Unavailable',
        `${what}: no CRI runtime answers at ${endpoint} (${detail}). Start one (containerd with its CRI plugin: \`bash scripts/containerd.sh start\` here, or \`npm test\` which starts it), or point --container-runtime-endpoint at a running one`,
        { adapter: ADAPTER, cause: error },
      );
    case GrpcCode.UNIMPLEMENTED:
      return new KubeletError(
        'Unavailable',
        `${what}: the runtime at ${endpoint} does not serve CRI runtime.v1 (${detail}): it needs containerd ≥ 1.6 with its "cri" plugin enabled (Docker's own containerd disables it) or CRI-O`,
        { adapter: ADAPTER, cause: error },
      );
    default: {
      let code: ErrorCode = 'Internal';
      if (/failed to reserve (sandbox|container) name|is reserved for/i.test(detail)) code = 'Conflict';
      else if (/already allocated|address already in use/i.test(detail)) code = 'Conflict';
      return new KubeletError(code, `${what}: ${detail}`, { adapter: ADAPTER, cause: error });
    }
  }
}

/** A pull that failed in the runtime (not on the way to it): sort "no such image" from "cannot reach a registry". */
export function classifyPullError(image: string, error: unknown, endpoint: string): KubeletError {
  const code = grpcCodeOf(error);
  if (code === GrpcCode.UNAVAILABLE || code === GrpcCode.UNIMPLEMENTED || code === GrpcCode.DEADLINE_EXCEEDED)
    return translate(error, `pull ${image}`, endpoint);
  const message = criDetail(error);
  const notFound =
    code === GrpcCode.NOT_FOUND ||
    /not found|manifest unknown|does not exist|pull access denied|insufficient_scope|unauthorized/i.test(message);
  const unreachable = /no such host|dial tcp|i\/o timeout|connection refused|TLS handshake|network is unreachable|server misbehaving/i.test(
    message,
  );
  const kind: ErrorCode = notFound ? 'NotFound' : unreachable ? 'Unavailable' : 'Internal';
  const hint = unreachable
    ? ' (no registry reachable: import the image into the runtime, e.g. `ctr -n k8s.io images import`, or use one it already has)'
    : '';
  return new KubeletError(kind, `pull ${image}: ${message}${hint}`, { adapter: ADAPTER, cause: error });
}
