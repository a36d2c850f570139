#!/bin/sh
# The suite after lint: TypeScript's check runs beside Jest instead of before it (about 30 s of tsc that would
# otherwise add to the whole suite's time; Jest compiles with swc, which checks no types), and the run fails if
# either fails. Arguments go to Jest.
npm run --silent typecheck &
typecheck=$!
npx jest --maxWorkers=3 "$@"
tests=$?
wait "$typecheck"
types=$?
[ "$tests" -eq 0 ] && [ "$types" -eq 0 ]
