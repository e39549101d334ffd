#!/usr/bin/env bash
# The edit-test cycle (docs/development.md): the unit tests, then the integration files whose path holds
# each word given (all of them if none), against the local stack (started if it is not running, left running).
#   npm run test:inner -- kafka-source checkpoints
set -euo pipefail
cd "$(dirname "$0")/.."
export KBD_KEEP_STACK=1
npx vitest run --project unit
if [[ $# -eq 0 ]]; then
  npx vitest run --project integration
else
  npx vitest run --project integration "$@"
fi
