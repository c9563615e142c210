#!/usr/bin/env bash
# What a `[[service]]` adds to a run's start, with a real service: Debian's PostgreSQL (the
# image `localhost/eden-test:postgres`, built by `cargo test services`), ready when
# `pg_isready` says so.
#  - eden: start to first iteration with the service against without it, runs interleaved,
#    medians of N (the sandbox the same: the engine's bridge, no rules, so only the service
#    differs);
#  - the service's own start, by hand: `ENGINE run -d --network container:X` beside a running
#    container, then `ENGINE exec … pg_isready` every 100 ms until it answers, medians of N.
# Goal: eden's difference within the service's own start plus 200 ms.
#   bench/services.sh [N] [ENGINE...]   (default: 7, docker podman)
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:postgres
runs=${1:-7}
shift || true
engines=("$@")
[ ${#engines[@]} -eq 0 ] && engines=(docker podman)
cd "$repo"
cmd='cat >/dev/null; echo working'
for engine in "${engines[@]}"; do
  if ! "$engine" image inspect "$image" >/dev/null 2>&1; then
    echo "$engine: image $image missing (run \`cargo test services\` once to build it)"; continue
  fi
  with=(); without=(); raw=()
  for n in $(seq "$runs"); do
    for services in 1 0; do
      sandbox="kind = \"$engine\"
image = \"$image\"
network = \"bridge\""
      sandbox_plan 1 "$cmd"
      if [ "$services" = 1 ]; then
        printf '[[service]]\nname = "db"\nimage = "%s"\nready = "pg_isready -h 127.0.0.1 -q"\n' "$image" >> "$work/plan.toml"
      fi
      "$eden" run "$work/plan.toml" --quiet --json > "$work/run.json"
      start=$(first_iteration_ms "$work/run.json")
      if [ "$services" = 1 ]; then with+=("$start"); else without+=("$start"); fi
    done
    # By hand: a container to stand beside, then the service and its readiness.
    "$engine" run -d --init --name "bench-beside-$n" "$image" sleep 300 >/dev/null
    begin=$(now_ns)
    "$engine" run -d --name "bench-db-$n" --network "container:bench-beside-$n" "$image" >/dev/null
    until "$engine" exec "bench-db-$n" pg_isready -h 127.0.0.1 -q; do sleep 0.1; done
    raw+=($(( ($(now_ns) - begin) / 1000000 )))
    "$engine" rm -f "bench-db-$n" >/dev/null && "$engine" rm -f "bench-beside-$n" >/dev/null
  done
  w=$(printf '%s\n' "${with[@]}" | median); o=$(printf '%s\n' "${without[@]}" | median); r=$(printf '%s\n' "${raw[@]}" | median)
  python3 -c "import sys; e, w, o, r = sys.argv[1], *map(float, sys.argv[2:]); print(f'{e}: start to first iteration {w:.0f} ms with PostgreSQL vs {o:.0f} ms without: +{w - o:.0f} ms; the service alone by hand {r:.0f} ms; eden adds {w - o - r:+.0f} ms (goal <= 200), medians of $runs')" "$engine" "$w" "$o" "$r"
done
