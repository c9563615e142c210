#!/usr/bin/env bash
# A stand-in for a coding agent: reads its prompt on stdin, writes and commits a file, and
# prints the completion signal on the third iteration. Used by manifests/commit-loop.toml.
set -euo pipefail
prompt=$(cat)
iteration=${prompt##*iteration }
iteration=${iteration%%[!0-9]*}
echo "agent: working on iteration $iteration"
mkdir -p eden-demo
# The run's own branch in the note: a second run in the same repository has something to commit.
echo "note $iteration from $(git branch --show-current)" > "eden-demo/note-$iteration.txt"
git add "eden-demo/note-$iteration.txt"
git commit -q -m "eden demo: note $iteration"
echo "agent: committed eden-demo/note-$iteration.txt"
if [ "$iteration" -ge 3 ]; then
  echo "agent: all notes written <promise>COMPLETE</promise>"
fi
