#!/bin/sh
# memory.sh: the behaviour tests on the memory backend.
exec "$(dirname "$0")/run-bats.sh" memory "$@"
