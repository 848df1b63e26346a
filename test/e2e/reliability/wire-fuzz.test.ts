// Random and mutated frontend messages of every kind: never XX000, never a lost session, other sessions unaffected (issue 16 item 4).
import { wireFuzzSuite } from '../../helpers/wire-fuzz.js';

// Sized for `npm test`; test/clients/wire-fuzz-50k.test.ts runs 50,000 with a new seed each CI run.
wireFuzzSuite(Number(process.env.PGWARDEN_WIRE_FUZZ_MESSAGES ?? 2000), 16, true);
