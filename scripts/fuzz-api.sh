#!/usr/bin/env bash
# fuzz-api.sh: property-based API fuzzing of notesd with schemathesis (part of the README's test command, so CI runs it).
#
#   fuzz-api.sh NOTESD_BINARY WORK_DIR [OPENAPI_YAML]
#
# Starts NOTESD_BINARY on a free loopback port with a fresh data directory under
# WORK_DIR, creates fixtures through the API (curl), runs schemathesis against
# OPENAPI_YAML (default: docs/openapi.yaml next to this script's repository, else
# ./openapi.yaml) with every check, seeded, then checks that notesd is still alive and
# serving, stops it, and exits non-zero on any failure. Nothing is written outside
# WORK_DIR (schemathesis runs from a folder inside it, so its .schemathesis cache and
# reports stay there too).
#
# Environment:
#   NOTES_FUZZ_EXAMPLES  examples per operation and phase (default 200)
#   NOTES_FUZZ_SEED      seed (default 1)
#   NOTES_FUZZ_WORKERS   schemathesis workers (default 2; 1 with a Python 3.11 older than 3.11.9)
#   NOTES_FUZZ_VENV      virtualenv to use or create (default WORK_DIR/venv)
#   NOTES_FUZZ_ARGS      extra schemathesis arguments (e.g. --continue-on-failure)
#   PYTHON               python to create the venv with (default: python3.13, python3.12 or
#                        python3, the first found). Python 3.11 before 3.11.9 can fail with
#                        "AST constructor recursion depth mismatch" under 2 workers (CPython
#                        gh-106905); with such a python the default is 1 worker.
#
# The run counts as failed on any schemathesis failure or error, or when notesd is not
# alive and answering afterwards. Failures whose answer is one of the few rules that no
# JSON Schema can state (see hooks.py below) are not counted; they are listed instead.
# Timing: 200 examples take 3-4 minutes on 2 cores (one worker), plus the install once.
#
# Needs: bash, curl, python3 (3.9+) with venv, network access to PyPI once. notesd must
# run as a Unix user whose name is a valid account name (it becomes the admin).
set -euo pipefail

ST_VERSION=4.32.5
die() { echo "fuzz-api: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: $0 NOTESD_BINARY WORK_DIR [OPENAPI_YAML]"
NOTESD=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$NOTESD" ] || die "$1 is not an executable"
mkdir -p "$2"
WORK=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $# -ge 3 ]; then SPEC=$3
elif [ -f "$HERE/../docs/openapi.yaml" ]; then SPEC=$HERE/../docs/openapi.yaml
else SPEC=$HERE/openapi.yaml; fi
[ -f "$SPEC" ] || die "no OpenAPI document at $SPEC"
EXAMPLES=${NOTES_FUZZ_EXAMPLES:-200}
SEED=${NOTES_FUZZ_SEED:-1}
VENV=${NOTES_FUZZ_VENV:-$WORK/venv}
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON
else
  PY=
  for c in python3.13 python3.12 python3; do
    if "$c" -c 'import venv' >/dev/null 2>&1; then PY=$c; break; fi
  done
  [ -n "$PY" ] || die "no working python3 with venv"
fi
if [ -x "$VENV/bin/python" ]; then VPY=$VENV/bin/python; else VPY=$PY; fi
if "$VPY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) or sys.version_info[:3] >= (3, 11, 9) else 1)'; then
  WORKERS=${NOTES_FUZZ_WORKERS:-2}
else
  WORKERS=${NOTES_FUZZ_WORKERS:-1}
fi
START=$(date +%s)

# 1. schemathesis, pinned, in a virtualenv (created once, reused afterwards).
if [ ! -x "$VENV/bin/schemathesis" ] || [ "$("$VENV/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $ST_VERSION" ]; then
  echo "fuzz-api: installing schemathesis $ST_VERSION into $VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$ST_VERSION"
fi
"$VENV/bin/schemathesis" --version

# 2. A fresh notesd on a free loopback port.
RUN=$(mktemp -d "$WORK/run.XXXXXX")
DATA=$RUN/data
mkdir -p "$DATA" "$RUN/st"
SOCK=$DATA/notesd.sock
if [ ${#SOCK} -gt 100 ]; then SOCKDIR=$(mktemp -d /tmp/notesfuzz.XXXXXX); SOCK=$SOCKDIR/notesd.sock; fi
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
BASE=http://127.0.0.1:$PORT
LOG=$RUN/notesd.log
"$NOTESD" --data-dir "$DATA" --socket "$SOCK" --listen "127.0.0.1:$PORT" --log-level info >"$LOG" 2>&1 &
NOTESD_PID=$!
stop_notesd() {
  if kill -0 "$NOTESD_PID" 2>/dev/null; then
    kill -TERM "$NOTESD_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$NOTESD_PID" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$NOTESD_PID" 2>/dev/null && { echo "fuzz-api: notesd ignored SIGTERM; killing it" >&2; kill -KILL "$NOTESD_PID" 2>/dev/null || true; }
  fi
  wait "$NOTESD_PID" 2>/dev/null || true
  [ -n "${SOCKDIR:-}" ] && rm -rf "$SOCKDIR"
  return 0
}
trap stop_notesd EXIT
for _ in $(seq 1 150); do
  curl -fsS "$BASE/healthz" >/dev/null 2>&1 && break
  kill -0 "$NOTESD_PID" 2>/dev/null || { cat "$LOG" >&2; die "notesd exited at start"; }
  sleep 0.2
done
curl -fsS "$BASE/healthz" >/dev/null || { tail -20 "$LOG" >&2; die "notesd did not answer /healthz"; }
echo "fuzz-api: notesd pid $NOTESD_PID on $BASE, data in $DATA"

# 3. Fixtures. On the socket, the Unix user running notesd is its admin: ask for a token.
json() { "$PY" -c 'import json,sys
d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[int(k)] if isinstance(d,list) else d[k]
print(d)' "$1"; }
ME=$(id -un)
ADMIN_TOKEN=$(curl -fsS --unix-socket "$SOCK" -X POST -d '' "http://localhost/v1/accounts/$ME/tokens" | json token)
api() { # METHOD PATH [JSON]   (as the admin, or as $AS)
  local auth="Authorization: Bearer ${AS:-$ADMIN_TOKEN}"
  if [ $# -ge 3 ]; then curl -fsS -X "$1" "$BASE$2" -H "$auth" -H 'Content-Type: application/json' --data-binary "$3"
  else curl -fsS -X "$1" "$BASE$2" -H "$auth"; fi
}
OWNER=$(api GET /v1/whoami | json name)
Z='{"owner":"'$OWNER'","name":"_defaultZone"}'
W='{"owner":"'$OWNER'","name":"work"}'
BOB_TOKEN=$(api POST /v1/accounts '{"name":"bob","email":"bob@example.com"}' | json token)  # a second account
api POST /v1/accounts '{"name":"carol"}' >/dev/null                      # an account to disable and enable
api POST /v1/accounts '{"name":"dave"}' >/dev/null                       # an account to delete
DOOMED_TOKEN=$(api POST /v1/accounts/carol/tokens '{"label":"to revoke"}' | json id)  # a token to revoke
api POST /v1/zones '{"name":"work"}' >/dev/null
api POST /v1/zones '{"name":"scratch"}' >/dev/null
api POST /v1/records/modify '{"zone":'"$Z"',"saves":[
  {"recordName":"folder1","recordType":"folder","name":"Folder"},
  {"recordName":"note1","recordType":"note","name":"plan.md","body":"# Plan\nfirst"},
  {"recordName":"note2","recordType":"note","name":"doomed.md","body":"# Doomed"},
  {"recordName":"note3","recordType":"note","name":"inner.md","parent":"folder1","body":"# Inner\n[plan](plan.md)"},
  {"recordName":"file1","recordType":"file","name":"pic.png","parent":"folder1","bytes":"iVBORw0KGgo="},
  {"recordName":"free1","recordType":"note","name":"free1.md","body":"unshared"},
  {"recordName":"free2","recordType":"folder","name":"Free folder"},
  {"recordName":"free3","recordType":"note","name":"free3.md","parent":"free2","body":"unshared"}]}' >/dev/null
TAG=$(api POST /v1/records/lookup '{"zone":'"$Z"',"recordNames":["note1"]}' | json records.0.changeTag)
api POST /v1/records/modify '{"zone":'"$Z"',"saves":[{"recordName":"note1","recordType":"note","name":"plan.md","body":"# Plan\nsecond","changeTag":"'"$TAG"'"}]}' >/dev/null
api POST /v1/records/modify '{"zone":'"$W"',"saves":[{"recordName":"w1","recordType":"note","name":"work.md","body":"# Work"}]}' >/dev/null
# Deleted notes in the default zone's trash, for restoreFromTrash to bring back (each
# once; a later restore of the same one is 404 or 409 by design).
TRASHED=$(seq 1 40 | sed 's/.*/{"recordName":"gone&","recordType":"note","name":"gone&.md","body":"gone"}/' | paste -sd, -)
api POST /v1/records/modify '{"zone":'"$Z"',"saves":['"$TRASHED"']}' >/dev/null
api POST /v1/records/modify '{"zone":'"$Z"',"deletes":['"$(seq 1 40 | sed 's/.*/{"recordName":"gone&"}/' | paste -sd, -)"']}' >/dev/null
# Share A: the note, public read-only link, bob invited (reads, public page, accept/leave as bob).
S=$(api POST /v1/shares '{"zone":'"$Z"',"rootRecordName":"note1","publicPermission":"readOnly","participants":[{"name":"bob","permission":"readOnly"}]}')
SHARE_A=$(json id <<<"$S"); TOKEN_A=$(json urlToken <<<"$S")
# Share B: the folder, public read-only (public site paths).
S=$(api POST /v1/shares '{"zone":'"$Z"',"rootRecordName":"folder1","publicPermission":"readOnly"}')
TOKEN_B=$(json urlToken <<<"$S")
# Share C: the whole zone "work", bob invited (updates and participants).
SHARE_C=$(api POST /v1/shares '{"zone":'"$W"',"participants":[{"name":"bob","permission":"readWrite"}]}' | json id)
# Share D: note2, for stopShare.
SHARE_D=$(api POST /v1/shares '{"zone":'"$Z"',"rootRecordName":"note2"}' | json id)
ZTOKEN=$(api GET /v1/zones | "$PY" -c 'import json,sys; print([z["changeToken"] for z in json.load(sys.stdin)["zones"] if z["id"]["name"]=="_defaultZone"][0])')
DTOKEN=$(api POST /v1/changes '{"scope":"private"}' | json changeToken)
echo "fuzz-api: fixtures: shares A=$SHARE_A C=$SHARE_C D=$SHARE_D, zone token $ZTOKEN"

# 4. schemathesis configuration: fixture values for parameters and body fields.
cat >"$RUN/st/schemathesis.toml" <<TOML
headers = { Authorization = "Bearer $ADMIN_TOKEN" }
hooks = "hooks.py"

# 413 limitExceeded is how notesd refuses too many items (lookup > 2000, modify > 400,
# participants > 100): a rejection, documented, though not in schemathesis' default list.
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429, "5xx"]

[dictionaries.owners]
values = ["$OWNER"]
[dictionaries.zones]
values = ["_defaultZone", "work"]
[dictionaries.defaultzone]
values = ["_defaultZone"]
[dictionaries.records]
values = ["note1", "folder1", "note3", "file1", "free1", "free2", "free3"]
[dictionaries.trashed]
values = [$(seq 1 40 | sed 's/.*/"gone&"/' | paste -sd, -)]
[dictionaries.accounts]
values = ["bob"]
[dictionaries.ztokens]
values = ["$ZTOKEN"]
[dictionaries.dtokens]
values = ["$DTOKEN", "d1.0"]
[dictionaries.sitepaths]
values = ["index.html", "inner.html", "pic.png", "style.css", "inner.md"]
[dictionaries.queries]
values = ["plan", "\\"the plan\\"", "pla*", "lan", "go", "in:private", "in:private/Folder", "title:note", "by:$OWNER", "modified:>=2026-01-01", "note -plan", "plan OR note", "東京", "e-mail"]
[dictionaries.shareurls]
values = ["$BASE/s/$TOKEN_A#plan.md", "$TOKEN_A"]

[parameters]
"path.id" = "$SHARE_A"
"path.token" = "$TOKEN_A"
"body.zone.owner" = { dictionary = "owners", probability = 0.9 }
"body.zone.name" = { dictionary = "zones", probability = 0.8 }
"body.recordName" = { dictionary = "records", probability = 0.7 }
"body.recordNames[*]" = { dictionary = "records", probability = 0.7 }
"body.rootRecordName" = { dictionary = "records", probability = 0.5 }
"body.participants[*].name" = { dictionary = "accounts", probability = 0.7 }

[[operations]]
include-operation-id = "publicSitePath"
parameters = { "path.token" = "$TOKEN_B", "path.path" = { dictionary = "sitepaths", probability = 0.8 } }

[[operations]]
include-operation-id = ["issueToken", "listAccountTokens"]
parameters = { "path.name" = "bob" }

[[operations]]
include-operation-id = "updateAccount"
parameters = { "path.name" = "carol" }

# The link password form: a body over 16 KiB is refused (413) whatever the schema allows.
[[operations]]
include-operation-id = ["unlockPublicPage", "unlockPublicSitePath"]
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "3xx", 401, 403, 404, 409, 413, 429, "5xx"] } }

# A query is a language of its own (docs/search.md) that JSON Schema cannot state: a
# string the schema allows may hold nothing to look for ("", "-a", "a OR"), which is
# 400 with what to change. Real queries come from the dictionary most of the time.
[[operations]]
include-operation-id = "search"
parameters = { "body.query" = { dictionary = "queries", probability = 0.6 } }
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403, 404, 409, 429, "5xx"] } }

# The fixture account can be deleted once; later deletions of it are 404 by design (and
# the stateful phase would chain createAccount's new name to a path fixed to dave).
[[operations]]
include-operation-id = "deleteAccount"
parameters = { "path.name" = "dave" }
checks = { ensure_resource_availability = { enabled = false } }
phases = { stateful = { enabled = false } }

# The fixture token can be revoked once; later revocations of it are 404 by design.
[[operations]]
include-operation-id = "revokeToken"
parameters = { "path.id" = "$DOOMED_TOKEN" }
checks = { ensure_resource_availability = { enabled = false } }

# A token made by createToken would be revoked through revokeToken, whose id the lines
# above fix to the fixture token: the stateful phase would revoke that one, not the new
# one, and call the new one missing. createToken is fuzzed, not chained.
[[operations]]
include-operation-id = "createToken"
phases = { stateful = { enabled = false } }

[[operations]]
include-operation-id = ["updateShare", "addParticipants"]
parameters = { "path.id" = "$SHARE_C", "path.name" = "bob" }

# The stateful phase infers that POST .../participants creates .../participants/{name};
# it does only for the names in its body (an empty list invites nobody), and the name
# here is pinned to bob, who may have been removed already: a 404 then is no finding.
[[operations]]
include-operation-id = "removeParticipant"
parameters = { "path.id" = "$SHARE_C", "path.name" = "bob" }
checks = { ensure_resource_availability = { enabled = false } }

[[operations]]
include-operation-id = "stopShare"
parameters = { "path.id" = "$SHARE_D" }

[[operations]]
include-operation-id = ["acceptShare", "leaveShare"]
headers = { Authorization = "Bearer $BOB_TOKEN" }
parameters = { "body.url" = { dictionary = "shareurls", probability = 0.8 } }

# Each trashed fixture comes back once; then it is no longer in the trash (404) and
# its name is taken (409).
[[operations]]
include-operation-id = "restoreFromTrash"
parameters = { "body.zone.name" = { dictionary = "defaultzone", probability = 0.9 }, "body.recordName" = { dictionary = "trashed", probability = 0.9 } }
checks = { ensure_resource_availability = { enabled = false } }

[[operations]]
include-operation-id = "deleteZone"
parameters = { "body.zone.name" = "scratch" }

[[operations]]
include-operation-id = "zoneChanges"
parameters = { "body.zone.name" = { dictionary = "defaultzone", probability = 0.9 }, "body.since" = { dictionary = "ztokens", probability = 1.0 } }

[[operations]]
include-operation-id = "databaseChanges"
parameters = { "body.since" = { dictionary = "dtokens", probability = 1.0 } }
TOML
cp "$SPEC" "$RUN/st/openapi.yaml"

# Rules no JSON Schema can state (they compare items of a request with each other or
# with the server's state). A "schema-valid request rejected" failure whose answer is
# exactly one of these sentences is not a finding; anything else still fails the run.
cat >"$RUN/st/hooks.py" <<'PY'
import re
import schemathesis

SEMANTIC_REJECTIONS = {
    "modifyRecords": [
        r"appears twice in one modify operation",           # record names unique per operation
        r"holds at most 400 saves and deletes",             # saves + deletes <= 400 (413)
        r"cannot be its own parent",
        r"its own ancestor; folders cannot contain themselves",
        r"not a folder; only folders hold records",
        r"a save cannot turn it into",
        r"into itself or one of its own subfolders",
    ],
    "createShare": [r"^You own this share; invite others\.$"],
    "addParticipants": [r"^You own this share; invite others\.$"],
    "zoneChanges": [r"^The change token is not one this server issued", r"fetch all (its|) ?records from scratch"],
    "databaseChanges": [r"^The change token is not one this server issued"],
}

@schemathesis.hook
def filter_failure(context, failure, case, response):
    if getattr(failure, "code", "") != "ST202":
        return True
    patterns = SEMANTIC_REJECTIONS.get(case.operation.definition.raw.get("operationId", ""), [])
    try:
        message = response.json()["error"]["message"]
    except Exception:
        return True
    if any(re.search(p, message) for p in patterns):
        with open("filtered.log", "a") as log:  # kept for review: what was not counted
            log.write(f"{case.operation.label}\t{response.status_code}\t{message}\n")
        return False
    return True
PY

# 5. The run.
echo "fuzz-api: schemathesis on $SPEC, $EXAMPLES examples per operation, seed $SEED"
set +e
# shellcheck disable=SC2086
(cd "$RUN/st" && "$VENV/bin/schemathesis" run openapi.yaml --url "$BASE" \
  --checks all --max-examples "$EXAMPLES" --seed "$SEED" --workers "$WORKERS" \
  --request-timeout 10 --no-color --output-sanitize false \
  --report junit,har --report-dir "$RUN/report" ${NOTES_FUZZ_ARGS:-}) 2>&1 | tee "$RUN/schemathesis.out"
ST_RC=${PIPESTATUS[0]}
set -e

# 5b. The same document as a read-only participant (frank, in share A) and as someone in
# by a public link only (gina, through share B's), fewer examples each: every operation
# must still answer as documented when the caller may do less.
FRANK_TOKEN=$(api POST /v1/accounts '{"name":"frank"}' | json token)
GINA_TOKEN=$(api POST /v1/accounts '{"name":"gina"}' | json token)
api POST "/v1/shares/$SHARE_A/participants" '{"participants":[{"name":"frank","permission":"readOnly"}]}' >/dev/null
AS=$FRANK_TOKEN api POST /v1/accept '{"url":"'"$TOKEN_A"'"}' >/dev/null
AS=$GINA_TOKEN api POST /v1/accept '{"url":"'"$TOKEN_B"'"}' >/dev/null
for ROLE in frank:$FRANK_TOKEN gina:$GINA_TOKEN; do
  NAME=${ROLE%%:*}; ROLE_TOKEN=${ROLE#*:}
  mkdir -p "$RUN/st-$NAME"
  cp "$RUN/st/openapi.yaml" "$RUN/st/hooks.py" "$RUN/st-$NAME/"
  sed "1s/.*/headers = { Authorization = \"Bearer $ROLE_TOKEN\" }/" "$RUN/st/schemathesis.toml" >"$RUN/st-$NAME/schemathesis.toml"
  echo "fuzz-api: schemathesis as $NAME, ${NOTES_FUZZ_ROLE_EXAMPLES:-8} examples per operation"
  set +e
  # shellcheck disable=SC2086
  (cd "$RUN/st-$NAME" && "$VENV/bin/schemathesis" run openapi.yaml --url "$BASE" \
    --checks all --max-examples "${NOTES_FUZZ_ROLE_EXAMPLES:-8}" --seed "$SEED" --workers "$WORKERS" \
    --request-timeout 10 --no-color --output-sanitize false ${NOTES_FUZZ_ARGS:-}) >"$RUN/schemathesis-$NAME.out" 2>&1
  ROLE_RC=$?
  set -e
  sed -n '/=== SUMMARY ===/,$p' "$RUN/schemathesis-$NAME.out" | head -30
  if [ "$ROLE_RC" -ne 0 ]; then
    echo "fuzz-api: schemathesis as $NAME failed (exit $ROLE_RC); its output: $RUN/schemathesis-$NAME.out" >&2
    grep -A12 -E "^_+ .* _+$" "$RUN/schemathesis-$NAME.out" | head -80 >&2
    ST_RC=$ROLE_RC
  fi
done

if [ -s "$RUN/st/filtered.log" ]; then
  echo "fuzz-api: rejections not counted (rules no schema can state), by operation and message:"
  sed -E 's/[0-9]+/N/g' "$RUN/st/filtered.log" | sort | uniq -c | sort -rn | head -20
fi

# 6. Still alive and serving?
ALIVE=0
if kill -0 "$NOTESD_PID" 2>/dev/null \
   && curl -fsS --max-time 5 "$BASE/healthz" | grep -q '"ok"' \
   && curl -fsS --max-time 5 -H "Authorization: Bearer $ADMIN_TOKEN" "$BASE/v1/whoami" | grep -q "\"$OWNER\""; then
  ALIVE=1
  echo "fuzz-api: notesd is alive and serving after the run"
else
  echo "fuzz-api: notesd is NOT serving after the run; the end of its log:" >&2
  tail -40 "$LOG" >&2
fi
ERRORS=$(grep -ciE ' (error|critical) ' "$LOG" || true)
[ "$ERRORS" -gt 0 ] && { echo "fuzz-api: notesd logged $ERRORS error lines:" >&2; grep -iE ' (error|critical) ' "$LOG" | head -20 >&2; }
stop_notesd
trap - EXIT
echo; echo "fuzz-api: schemathesis summary:"
sed -n '/=== SUMMARY ===/,$p' "$RUN/schemathesis.out"
echo "fuzz-api: schemathesis exit $ST_RC, notesd alive $ALIVE, $(( $(date +%s) - START ))s; output in $RUN"
[ "$ST_RC" -eq 0 ] && [ "$ALIVE" -eq 1 ] || exit 1
