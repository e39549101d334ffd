/**
 * How often the schedule fires, as the longest gap between two runs: the freshness target and the
 * alerts on runs that stop happening are derived from it. Minute and hour fields are read in full (`*`,
 * `*\/n`, lists, ranges, ranges with steps); a schedule that also names days or months has no single
 * period, and its freshness target must be set (`freshnessTargetSeconds`).
 */
export function schedulePeriodSeconds(schedule: string): number {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5) throw new Error(`schedule: "${schedule}" is not a five-field cron expression`);
  const [minute, hour, ...days] = fields as [string, string, string, string, string];
  if (days.some((f) => f !== '*')) {
    throw new Error(
      `schedule: "${schedule}" names days or months, so it has no single period; set freshnessTargetSeconds`,
    );
  }
  const minutes = valuesOf(minute, 0, 59, 'minute', schedule);
  const hours = valuesOf(hour, 0, 23, 'hour', schedule);
  const times = hours.flatMap((h) => minutes.map((m) => h * 60 + m)).sort((a, b) => a - b);
  let longest = times[0]! + 24 * 60 - times[times.length - 1]!; // across midnight
  for (let i = 1; i < times.length; i++) longest = Math.max(longest, times[i]! - times[i - 1]!);
  return longest * 60;
}

function valuesOf(field: string, min: number, max: number, name: string, schedule: string): number[] {
  const found = new Set<number>();
  for (const part of field.split(',')) {
    const match = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(part);
    if (match === null) throw new Error(`schedule: "${schedule}" has a ${name} field cron does not take`);
    const from = match[1] === '*' ? min : Number(match[2]);
    const to = match[1] === '*' ? max : match[3] !== undefined ? Number(match[3]) : match[4] ? max : from;
    const step = match[4] === undefined ? 1 : Number(match[4]);
    if (from < min || to > max || from > to || step < 1)
      throw new Error(`schedule: "${schedule}" has a ${name} out of range`);
    for (let v = from; v <= to; v += step) found.add(v);
  }
  return [...found];
}
