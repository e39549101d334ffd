/**
 * Test-only crash points: named places (`after-intent`, `mid-commit`, ...) where the crash matrices stop
 * the process to prove that nothing is lost or doubled whatever instant a run dies at. Nothing arms them in
 * production; the job's entry arms them from KBD_FAULT_POINT and KBD_FAULT_ACTION, read there alone.
 */
let armed: ((point: string) => void) | undefined;

/** The process may be stopped here, when a test armed this point. */
export function crashPoint(point: string): void {
  armed?.(point);
}

/** Whether any point is armed (a caller can then skip work done only to reach a point). */
export function crashPointsArmed(): boolean {
  return armed !== undefined;
}

/** Arms the points (the job's entry, from its environment); undefined disarms them. */
export function armCrashPoints(handler: ((point: string) => void) | undefined): void {
  armed = handler;
}

/**
 * The points an entry arms from its environment (KBD_FAULT_POINT): SIGKILL there, or freeze once
 * (KBD_FAULT_ACTION=stop: SIGSTOP, a zombie). Only the entries (the job, the CLI) call it, with their env.
 */
export function crashPointsOf(
  env: Readonly<Record<string, string | undefined>>,
): ((point: string) => void) | undefined {
  const faultPoint = env.KBD_FAULT_POINT?.trim() || null;
  if (faultPoint === null) return undefined;
  const action = env.KBD_FAULT_ACTION === 'stop' ? 'stop' : 'kill';
  let frozen = false;
  return (point) => {
    if (point !== faultPoint) return;
    if (action === 'kill') process.kill(process.pid, 'SIGKILL');
    else if (!frozen) {
      // A zombie: frozen once, here; after SIGCONT it goes on as a run that slept would.
      frozen = true;
      process.kill(process.pid, 'SIGSTOP');
    }
  };
}
