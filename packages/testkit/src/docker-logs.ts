/**
 * The text of a container's logs as the engine sends them without a TTY: frames of an 8-byte header
 * (stream, 3 bytes of nothing, a big-endian length) and their bytes, stdout and stderr interleaved.
 */
export function demultiplex(output: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= output.length) {
    const length = output.readUInt32BE(at + 4);
    parts.push(output.subarray(at + 8, at + 8 + length));
    at += 8 + length;
  }
  return Buffer.concat(parts).toString('utf8');
}
