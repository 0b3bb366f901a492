import { describe, expect, it } from '@jest/globals';
import { describeRejection, parseManifests } from '../src/parse.js';

/** A manifest whose one container has `MODE: x` and then `VALUE` written as `value`, in YAML. */
const withEnvValue = (value: string, head = '') =>
  `${head}id: web\ncontainers:\n  - name: app\n    image: nginx\n    env:\n      - name: MODE\n        value: x\n      - name: VALUE\n        value: ${value}\n`;

/**
 * Issue 17 item 3: env values were silently rewritten. `value: 01234` ran as 1234, `0x1F` as 31,
 * `1.10` as 1.1 and a 20-digit number lost digits, because YAML reads them as numbers and the
 * validator turned numbers back into text.
 */
describe('parseManifests: env values are text as written', () => {
  it.each(['01234', '0x1F', '1.10', '12345678901234567890', '1e3', 'true', 'False', '.inf'])(
    'refuses `value: %s`, quoting it as written',
    (value) => {
      const parsed = parseManifests(withEnvValue(value), 'web.yaml');
      expect(parsed.manifests).toEqual([]);
      expect(describeRejection(parsed.rejected[0]!)).toBe(
        `web.yaml (id "web"): containers[0].env[1].value: must be a string; quote it: ${JSON.stringify(value)}`,
      );
    },
  );

  it('refuses a JSON number the same way, quoting its digits as written', () => {
    const text = '{"id": "web", "containers": [{"name": "app", "image": "nginx", "env": [{"name": "V", "value": 1.10}]}]}';
    expect(parseManifests(text, 'web.json').rejected[0]!.errors).toEqual([
      { path: 'containers[0].env[0].value', message: 'must be a string; quote it: "1.10"' },
    ]);
  });

  // YAML 1.2, which yaml reads by default, has only true and false as booleans: `yes` is text.
  it.each([
    ['"01234"', '01234'],
    ["'0x1F'", '0x1F'],
    ['!!str 1.10', '1.10'],
    ['yes', 'yes'],
    ['on', 'on'],
    ['no', 'no'],
    ['~', ''],
    ['', ''],
  ])('reads `value: %s` as %j', (written, value) => {
    const parsed = parseManifests(withEnvValue(written), 'web.yaml');
    expect(parsed.rejected).toEqual([]);
    expect(parsed.manifests[0]!.containers[0]!.env[1]).toEqual({ name: 'VALUE', value });
  });

  // A text that asks for YAML 1.1 gets its booleans and octals, and so has them refused.
  it.each([
    ['yes', 'yes'],
    ['off', 'off'],
    ['01234', '01234'],
  ])('refuses `value: %s` under %%YAML 1.1, where it is not text', (written, quoted) => {
    const parsed = parseManifests(withEnvValue(written, '%YAML 1.1\n---\n'), 'web.yaml');
    expect(parsed.rejected[0]!.errors).toEqual([
      { path: 'containers[0].env[1].value', message: `must be a string; quote it: ${JSON.stringify(quoted)}` },
    ]);
  });

  it('refuses a number in a command, quoting it as written', () => {
    const text = 'id: web\ncontainers:\n  - name: app\n    image: busybox\n    command: [sleep, 010]\n';
    expect(parseManifests(text, 'web.yaml').rejected[0]!.errors).toEqual([
      { path: 'containers[0].command[1]', message: 'must be a string; quote it: "010"' },
    ]);
  });
});
