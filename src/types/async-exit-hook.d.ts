// Types for async-exit-hook 2.0.1, the part pgwarden uses (the package ships none).
declare module 'async-exit-hook' {
  interface ExitHook {
    (handler: (done?: () => void) => void): void;
    /** Stops listening to a process event it hooked (beforeExit, SIGINT, SIGTERM, SIGHUP, …). */
    unhookEvent(event: string): void;
    hookedEvents(): string[];
  }
  const hook: ExitHook;
  export default hook;
}
