#!/bin/sh
# kernel.sh: the behaviour tests on the kernel backend.
exec "$(dirname "$0")/run-bats.sh" kernel "$@"
