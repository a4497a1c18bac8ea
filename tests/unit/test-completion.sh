#!/bin/bash
# Drives the bash completion of corral (completion/corral.bash) as bash-completion would,
# with a stand-in corral on PATH that answers as corrald would: subcommands, every long
# option of every command's table in cli/ (so a new option fails here until it is
# completed), the user's own job ids per command, queues and projects. The zsh function
# is checked for syntax when zsh is installed.
set -uo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bc=/usr/share/bash-completion/bash_completion

skip() {
    echo "$1"
    [ "${CORRAL_TEST_STRICT:-0}" = 1 ] && exit 1
    exit 77
}
[ -r "$bc" ] || skip "bash-completion is not installed ($bc): skipped"
command -v python3 >/dev/null || skip "python3 is needed: skipped"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The stand-in: "corral --json queue --me [-t STATES]" and "corral --json info". Job 99
# appears only inside a name, where completion must not find it.
cat >"$tmp/corral" <<'EOF'
#!/bin/bash
echo "$*" >>"${0%/*}/calls"
case "$*" in
    "--json queue --me -t PENDING")
        echo '{"jobs":[{"id":43,"name":"p","state":"PENDING"}]}' ;;
    "--json queue --me"*)
        echo '{"jobs":[{"id":41,"name":"a\",\"id\":99","state":"RUNNING"},{"id":42,"name":"{\"id\":98}","state":"PENDING"}]}' ;;
    "--json info")
        echo '{"hostname":"h","version":"0","queues":[{"name":"express","priority":2},{"name":"normal","priority":1}],"projects":["physics","biology"]}' ;;
    *) exit 3 ;;
esac
EOF
chmod +x "$tmp/corral"

fails=0 checks=0
# One bash answers every query (sourcing bash-completion once): a line in, its candidates
# out, then an empty line.
coproc COMPLETER {
    bash --norc --noprofile -c '
        PATH=$1:$PATH
        . "$2"
        . "$3"
        while IFS= read -r line; do
            COMP_LINE=$line COMP_POINT=${#line}
            read -r -a COMP_WORDS <<<"$line"
            [[ $line == *" " ]] && COMP_WORDS+=("")
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMPREPLY=()
            _corral corral "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>&1
            for c in "${COMPREPLY[@]}"; do [[ -n $c ]] && printf "%s\n" "$c"; done
            echo
        done
    ' _ "$tmp" "$bc" "$src/completion/corral.bash"
}

# complete LINE: prints the candidates for the end of LINE, one per line.
complete_line() {
    local c
    printf '%s\n' "$1" >&"${COMPLETER[1]}"
    while IFS= read -r -t 20 c <&"${COMPLETER[0]}" && [ -n "$c" ]; do
        printf '%s\n' "$c"
    done
}

# expect LINE WORD...: each WORD is among the candidates.
expect() {
    local line=$1 got w
    shift
    got=$(complete_line "$line")
    for w in "$@"; do
        checks=$((checks + 1))
        if ! grep -qxF -- "$w" <<<"$got"; then
            echo "FAIL: '$line<TAB>' does not offer '$w'; it offers: $(tr '\n' ' ' <<<"$got")"
            fails=$((fails + 1))
        fi
    done
}

# refuse LINE WORD...: no WORD is among the candidates.
refuse() {
    local line=$1 got w
    shift
    got=$(complete_line "$line")
    for w in "$@"; do
        checks=$((checks + 1))
        if grep -qxF -- "$w" <<<"$got"; then
            echo "FAIL: '$line<TAB>' offers '$w'"
            fails=$((fails + 1))
        fi
    done
}

# Registered as bash-completion loads it.
checks=$((checks + 1))
reg=$(bash --norc --noprofile -c '. "$1"; complete -p corral' _ "$src/completion/corral.bash" 2>&1)
[[ $reg == "complete -F _corral corral" ]] || { echo "FAIL: complete -p corral: $reg"; fails=$((fails + 1)); }

# Every verb of cli/corral-main.c, and every long option of each command's table.
mapfile -t verbs < <(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", verb_.*/\1/p' "$src/cli/corral-main.c")
[ ${#verbs[@]} -ge 10 ] || { echo "FAIL: found only ${#verbs[@]} verbs in cli/corral-main.c"; exit 1; }
expect "corral " "${verbs[@]}"
expect "corral --json " "${verbs[@]}"
expect "corral sh" show
refuse "corral sh" submit
expect "corral --" --json --help --version

python3 - "$src" >"$tmp/options" <<'PY'
import re, sys, os
src = sys.argv[1]
main = open(os.path.join(src, "cli/corral-main.c")).read()
verbs = {}
for m in re.finditer(r'\{\s*"([\w-]+)"\s*,\s*(verb_\w+)\s*,', main):
    verbs.setdefault(m.group(2), []).append(m.group(1))
verbs["no_arguments"] = ["info", "reload"]
for name in sorted(os.listdir(os.path.join(src, "cli"))):
    if not name.endswith(".c"):
        continue
    text = open(os.path.join(src, "cli", name)).read()
    for m in re.finditer(r"static const struct option \w+\[\]\s*=\s*\{", text):
        fn = re.findall(r"^(?:static )?(?:int|bool|void) (\w+)\(", text[:m.start()], re.M)[-1]
        block = text[m.end():text.index("};", m.end())]
        served = verbs.get(fn, [])
        if fn == "verb_job_action":
            served = ["requeue"]  # --hold is requeue's; the others take only --help, --json
        for o in re.findall(r'\{\s*"([\w-]+)"', block):
            for v in served:
                print(v, "--" + o)
so = open(os.path.join(src, "cli/submit-options.c")).read()
for m in re.finditer(r'\{\s*"([\w-]+)"\s*,\s*(?:\'.\'|0)\s*,\s*\w+\s*,\s*(\w+)', so):
    if m.group(2) != "SUBMIT_FIELD_UNSUPPORTED":
        print("submit", "--" + m.group(1))
for f in re.findall(r'streq\(a, "(--[\w-]+)"\)', open(os.path.join(src, "cli/submit.c")).read()):
    print("submit", f)
PY
[ "$(wc -l <"$tmp/options")" -ge 40 ] || { echo "FAIL: the option tables of cli/ were not found"; exit 1; }
for v in $(cut -d' ' -f1 "$tmp/options" | sort -u); do
    mapfile -t opts < <(awk -v v="$v" '$1 == v { print $2 }' "$tmp/options")
    expect "corral $v --" "${opts[@]}"
done
refuse "corral submit --" --qos --clusters

# Job ids: the user's own, in the states the command acts on; never from inside a name.
expect "corral cancel " 41 42
refuse "corral cancel " 99 98
expect "corral show 4" 41 42
expect "corral hold " 43
refuse "corral hold " 41 42
grep -qx -- "--json queue --me -t PENDING" "$tmp/calls" || { echo "FAIL: hold did not ask for PENDING jobs"; fails=$((fails + 1)); }
expect "corral --json wait " 41 42

# Queues, projects, states, dependencies, option values.
expect "corral submit -q " express normal
expect "corral submit --partition " express normal
expect "corral submit --queue=" express normal
expect "corral queue -q " express normal
expect "corral submit -A " physics biology
expect "corral queue --project " physics biology
expect "corral queue -t R" R RUNNING
expect "corral cancel --state PENDING,R" PENDING,R PENDING,RUNNING
# ':' breaks words for readline: the candidates are what follows it.
expect "corral submit --dependency afterok:" 41 42
expect "corral submit -d af" after: afterany: afterok: afternotok:
expect "corral submit --export " ALL NONE
# After the job's command, its own words: no corral options.
refuse "corral submit -n 2 sleep --" --mem --queue
expect "corral config " check

if command -v zsh >/dev/null; then
    checks=$((checks + 1))
    zsh -n "$src/completion/_corral" || { echo "FAIL: zsh -n completion/_corral"; fails=$((fails + 1)); }
else
    echo "zsh is not installed: the zsh completion's syntax is not checked"
fi

echo "completion: $((checks - fails)) of $checks checks passed"
[ $fails = 0 ]
