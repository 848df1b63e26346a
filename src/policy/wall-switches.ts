// Test-only switches that turn a wall off, so each wall is shown to stand alone (DESIGN.md "Three walls"); never in the config.

/** Which walls are on. All are on unless a test turned one off in its own process. */
export interface WallSwitches {
  /**
   * The analysis's SEE checks (wall 1, DESIGN.md "Decision" step 2): masks, refusals of tests,
   * computations and whole rows of hidden columns, writes as reads. Off: every column is treated as
   * seen by the decision the proxy makes (grant computation never is: it calls decide() directly).
   */
  readonly seeChecks: boolean;
}

const ALL_ON: WallSwitches = Object.freeze({ seeChecks: true });
let current: WallSwitches = ALL_ON;

/** The switches in force in this process. */
export function wallSwitches(): WallSwitches {
  return current;
}

/** True when every wall is on: `serve` refuses to start otherwise. */
export function wallsIntact(): boolean {
  return current.seeChecks;
}

/**
 * For tests only (the noninterference suite run with a wall off): sets the switches of this process.
 * There is no config key, environment variable or flag that reaches it; `serve` refuses to start
 * when a wall is off. Returns a function that turns them back on.
 */
export function setWallSwitchesForTests(next: Partial<WallSwitches>): () => void {
  current = Object.freeze({ ...current, ...next });
  return () => {
    current = ALL_ON;
  };
}
