#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `tsc -b` (run by `npm ci` through `prepare`).
import { main } from '../dist/main.js';

process.exitCode = await main(process.argv.slice(2));
