#!/usr/bin/env node
// The pgwarden command: runs src/cli.ts through tsx's loader (no build step).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
