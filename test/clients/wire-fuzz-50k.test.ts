// The CI run of the wire fuzz: 50,000 random and mutated frontend messages through one session (issue 16 item 4).
import { wireFuzzSuite } from '../helpers/wire-fuzz.js';

// A new seed each run unless PGWARDEN_WIRE_FUZZ_SEED is set; the test's name carries it, to replay a failure.
wireFuzzSuite(50_000, Number(process.env.PGWARDEN_WIRE_FUZZ_SEED ?? Date.now() % 1_000_000), false);
