const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * A duration as kubectl shows an age, to two or three figures (apimachinery's
 * `duration.HumanDuration`): `45s` under 2 minutes, `5m30s` under 10, `25m` under 3 hours,
 * `5h30m` under 8, `20h` under 2 days, `3d4h` under 8, `30d` under 2 years, `2y45d` under 8,
 * then years. Up to a second and a bit in the future (clock skew) is `0s`; more is `<invalid>`.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(ms / MINUTE);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(ms / HOUR);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

/** How long ago an RFC 3339 time was, as kubectl's `translateTimestampSince`: `<unknown>` without one. */
export function since(time: string | undefined, now: number): string {
  const at = time === undefined ? Number.NaN : Date.parse(time);
  return Number.isNaN(at) ? '<unknown>' : humanDuration(now - at);
}

/**
 * A duration in words, as crictl and docker print a container's age (go-units'
 * `HumanDuration`): `Less than a second`, `1 second`, `45 seconds`, `About a minute`,
 * `5 minutes`, `About an hour`, `3 hours`, `4 days`, `3 weeks`, `5 months`, `2 years`.
 */
export function wordyDuration(ms: number): string {
  const seconds = Math.trunc(ms / SECOND);
  if (seconds < 1) return 'Less than a second';
  if (seconds === 1) return '1 second';
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.trunc(ms / MINUTE);
  if (minutes === 1) return 'About a minute';
  if (minutes < 60) return `${minutes} minutes`;
  // go-units rounds hours to the nearest one.
  const hours = Math.trunc(ms / HOUR + 0.5);
  if (hours === 1) return 'About an hour';
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.trunc(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.trunc(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24 / 30)} months`;
  return `${Math.trunc(Math.trunc(ms / HOUR) / 24 / 365)} years`;
}
