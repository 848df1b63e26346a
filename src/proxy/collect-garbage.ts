// A full garbage collection on request, debounced: after large messages are released, their memory goes back to the system.
import v8 from 'node:v8';
import vm from 'node:vm';

let gc: (() => void) | undefined;
let timer: NodeJS.Timeout | undefined;

/** V8's gc(), made callable without --expose-gc (the flag set at run time, the function read from a new context). */
function collector(): () => void {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc');
    gc = vm.runInNewContext('gc') as () => void;
  }
  return gc;
}

/**
 * Runs one full collection `delayMs` after the first request not yet served (requests meanwhile
 * join it, never push it back): the megabytes of a burst of large messages are unreachable once
 * released, but V8 collects them late (a large string lives in old space until a full collection),
 * so the resident size stays up during a burst and after it (issue 16 item 2: it returns within a
 * minute after a burst). At most one collection per `delayMs`. The timer does not keep the process
 * alive.
 */
export function collectGarbageSoon(delayMs = 500): void {
  if (timer) return;
  timer = setTimeout(() => {
    timer = undefined;
    collector()();
  }, delayMs);
  timer.unref();
}
