#!/usr/bin/env bash
# The compiler of the workspace's own crates in `./x test`'s release build
# (RUSTC_WORKSPACE_WRAPPER): clippy-driver, with warnings as errors, so the build the browser
# tests load is also clippy's pass for wasm32 and the browser's dependencies (Leptos, web-sys)
# are compiled once instead of checked and then compiled
# (docs/decisions/0026-the-release-build-lints-for-wasm32.md).
#
# Cargo runs it as `clippy-rustc.sh RUSTC ARGS…`; clippy-driver skips RUSTC itself. Queries
# (`-vV`, `--print`) pass through unchanged: only a crate being compiled gets `-D warnings`.
set -euo pipefail
for arg in "$@"; do
  if [ "$arg" = --crate-name ]; then
    exec clippy-driver "$@" -D warnings
  fi
done
exec clippy-driver "$@"
