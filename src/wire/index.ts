// Public surface of the PostgreSQL v3 wire codec (pure: no sockets, no SQL, no policy).
export * from './backend.js';
export * from './backend-encode.js';
export * from './codes.js';
export * from './error-fields.js';
export * from './framer.js';
export * from './frontend.js';
export * as frontendEncode from './frontend-encode.js';
export * from './protocol-error.js';
