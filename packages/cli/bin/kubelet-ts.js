#!/usr/bin/env -S node --max-semi-space-size=2
// Thin launcher: the CLI is compiled to dist/ by `tsc -b` (run by `npm ci` through `prepare`).
// A young generation of 2 MB a semi-space (V8's default grows to 16): the agent's garbage is short
// lived lines and buffers, and a default young generation grew the agent's heap by 32 MB under
// ten log followers for nothing (bench §10). `npm start` passes the same flag.
import { main } from '../dist/main.js';

process.exitCode = await main(process.argv.slice(2));
