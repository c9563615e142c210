#!/usr/bin/env bash
# The GitHub Action's step (action.yml): install eden unless it is on PATH, then run the
# manifest. Inputs come as environment variables, never pasted into the script: a manifest
# path or an argument can hold anything.
#   EDEN_ACTION_MANIFEST  the manifest to run (required)
#   EDEN_ACTION_ARGS      more arguments for `eden run`, split on whitespace
#   EDEN_ACTION_INSTALL   auto (default: when eden is not on PATH) | always | never
#   EDEN_ACTION_SOURCE    eden's source (the action's own checkout), built with cargo
#   EDEN_ACTION_IMAGE     build: build the manifest's image first (`eden image build --manifest`)
#   EDEN_ACTION_IMAGE_ARGS  more arguments for `eden image build`, split on whitespace
# eden itself writes the job summary and the step outputs (GITHUB_STEP_SUMMARY, GITHUB_OUTPUT).
set -euo pipefail

manifest=${EDEN_ACTION_MANIFEST:?"the action needs its manifest input: with: manifest: plan.toml"}
install=${EDEN_ACTION_INSTALL:-auto}
case "$install" in
  auto | always | never) ;;
  *) echo "eden action: install must be auto, always or never, not \`$install\`" >&2; exit 2 ;;
esac
image=${EDEN_ACTION_IMAGE:-}
case "$image" in
  "" | build) ;;
  *) echo "eden action: image must be build or empty, not \`$image\`" >&2; exit 2 ;;
esac

if [ "$install" = always ] || { [ "$install" = auto ] && ! command -v eden >/dev/null; }; then
  source_dir=${EDEN_ACTION_SOURCE:?"EDEN_ACTION_SOURCE: where eden's source is"}
  root="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/eden-action"
  if ! command -v cargo >/dev/null; then
    echo "eden action: cargo is needed to build eden (actions-rust-lang/setup-rust-toolchain, or a runner with Rust)" >&2
    exit 2
  fi
  cargo install --quiet --locked --path "$source_dir" --root "$root"
  export PATH="$root/bin:$PATH"
  if [ -n "${GITHUB_PATH:-}" ]; then echo "$root/bin" >> "$GITHUB_PATH"; fi
fi
if ! command -v eden >/dev/null; then
  echo "eden action: eden is not on PATH and install is \`never\`" >&2
  exit 2
fi

if [ "$image" = build ]; then
  image_args=()
  if [ -n "${EDEN_ACTION_IMAGE_ARGS:-}" ]; then
    read -r -a image_args <<< "$EDEN_ACTION_IMAGE_ARGS"
  fi
  eden image build --manifest "$manifest" "${image_args[@]}"
fi

extra=()
if [ -n "${EDEN_ACTION_ARGS:-}" ]; then
  read -r -a extra <<< "$EDEN_ACTION_ARGS"
fi
exec eden run "$manifest" "${extra[@]}"
