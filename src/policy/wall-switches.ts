// Test-only switches that turn a wall off, so each wall is shown to stand alone (DESIGN.md "Three walls"); never in the config.

/**
 * Which walls are on. `seeChecks` — the analysis's SEE checks (wall 1, DESIGN.md "Decision"
 * step 2): masks, refusals of tests, computations and whole rows of hidden columns, writes as
 * reads; off, every column is treated as seen by the decision the proxy makes (grant computation
 * never is: it calls decide() directly). `rewrite` — mask at read (wall 2): the masking subqueries
 * in the text sent upstream. All are on unless a test turned one off in its own process (or for
 * one in-process proxy, `startProxy(…, { walls })`).
 */
export interface WallSwitches {
  readonly seeChecks: boolean;
  readonly rewrite: boolean;
}

/** Every wall on: what `serve`, `demo` and `mcp` always run with. */
export const WALLS_ON: WallSwitches = Object.freeze({ seeChecks: true, rewrite: true });
let current: WallSwitches = WALLS_ON;

/** The switches in force in this process. */
export function wallSwitches(): WallSwitches {
  return current;
}

/** True when every wall is on: `serve` refuses to start otherwise. */
export function wallsIntact(): boolean {
  return current.seeChecks && current.rewrite;
}

/**
 * For tests only (the noninterference suite run with a wall off): sets the switches of this process.
 * There is no config key, environment variable or flag that reaches it; `serve` refuses to start
 * when a wall is off. Returns a function that turns them back on.
 */
export function setWallSwitchesForTests(next: Partial<WallSwitches>): () => void {
  current = Object.freeze({ ...current, ...next });
  return () => {
    current = WALLS_ON;
  };
}

/** The switches of this process combined with those of one proxy (a wall is on only if on in both). */
export function effectiveWalls(proxy: Partial<WallSwitches> | undefined): WallSwitches {
  return {
    seeChecks: current.seeChecks && proxy?.seeChecks !== false,
    rewrite: current.rewrite && proxy?.rewrite !== false,
  };
}
