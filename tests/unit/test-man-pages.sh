#!/bin/bash
# Every subcommand, option and configuration key has its man page entry. The lists come
# from the code's own tables, not from a list kept by hand:
#   corral(1)           the verbs of cli/corral-main.c, the getopt tables of cli/*.c (each
#                       option in the section of a verb it serves), the submit option table
#                       of cli/submit-options.c and the client flags of cli/submit.c;
#   corrald(8)          the getopt table of daemon/corrald.c;
#   corral-sim(1)       the getopt table of sim/corral-sim.c;
#   corral.conf(5)      the items[] table of config/config.c, each key in its section;
#   corral-projects(5)  the items[] table of config/projects.c, each key in its section.
# Then the built pages must be lint-clean: mandoc -Tlint (the empty paragraphs scdoc
# emits aside) and man --warnings.
# Environment: CORRAL_SRCDIR, CORRAL_BUILDDIR (for the built pages; lint is skipped
# without them).
set -uo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${CORRAL_BUILDDIR:-}

command -v python3 >/dev/null || { echo "python3 is needed"; exit 77; }

python3 - "$src" <<'PY' || exit 1
import re, sys, os

src = sys.argv[1]
def read(p):
    with open(os.path.join(src, p), encoding="utf-8") as f:
        return f.read()

failures = []

def sections(scd, level):
    """{heading: text} of the scdoc page, for headings of this level ('#' or '##')."""
    out, cur = {}, None
    for line in scd.splitlines():
        m = re.match(r"^(#+) (.*)$", line)
        if m and len(m.group(1)) <= len(level):
            cur = m.group(2).strip() if m.group(1) == level else None
            if cur is not None:
                out[cur] = ""
            continue
        if cur is not None:
            out[cur] += line + "\n"
    return out

def bold_tokens(text):
    """Option-like tokens (-x, --long) inside *bold* spans."""
    toks = set()
    for span in re.findall(r"\*([^*\n]+)\*", text):
        toks.update(re.findall(r"(?<![\w-])(--?[A-Za-z0-9][\w-]*)", span))
    return toks

def c_block(text, start_re):
    """The brace block opened on the line matching start_re, up to the matching '};'."""
    out = []
    for m in re.finditer(start_re, text):
        i = text.index("{", m.end() - 1)
        depth, j = 0, i
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        out.append((m.start(), text[i:j + 1]))
    return out

def getopt_tables(path):
    """[(function name, [(long, short or None)])] of each struct option table."""
    text = read(path)
    tables = []
    for pos, block in c_block(text, r"static const struct option \w+\[\]\s*=\s*\{"):
        funcs = list(re.finditer(r"^(?:static )?(?:int|bool|void) (\w+)\(", text[:pos], re.M))
        func = funcs[-1].group(1) if funcs else "?"
        opts = []
        for m in re.finditer(r'\{\s*"([\w-]+)"\s*,\s*\w+\s*,\s*\w+\s*,\s*(\'(.)\'|\w+)\s*\}', block):
            opts.append((m.group(1), m.group(3)))
        # A short option exists only when the function's optstring has its letter.
        body = text[pos:]
        nxt = re.search(r"^}", body, re.M)
        body = body[:nxt.start()] if nxt else body
        optstrings = "".join(re.findall(r'getopt_long\(\s*\w+\s*,\s*\w+\s*,\s*([^,]+),', body))
        letters = set(re.findall(r'"([^"]*)"', optstrings) and "".join(re.findall(r'"([^"]*)"', optstrings)))
        opts = [(l, s if s and s in letters else None) for l, s in opts]
        tables.append((func, opts))
    return tables

def check(page, where, text, long_name, short=None, what="option"):
    toks = bold_tokens(text)
    if "--" + long_name not in toks:
        failures.append(f"{page}: {what} --{long_name} is not documented in {where}")
    if short and "-" + short not in toks:
        failures.append(f"{page}: {what} -{short} (--{long_name}) is not documented in {where}")

# --- corral(1) ---------------------------------------------------------------------
page = "man/corral.1.scd"
scd = read(page)
top = sections(scd, "#")
verb_secs = sections(scd, "##")
main = read("cli/corral-main.c")
verbs = {}  # function -> [verb names]
for m in re.finditer(r'\{\s*"([\w-]+)"\s*,\s*(verb_\w+)\s*,', main):
    verbs.setdefault(m.group(2), []).append(m.group(1))
verb_of_section = {}
for heading in verb_secs:
    for v in re.split(r"[,\s]+", heading):
        verb_of_section[v] = heading
for fn, names in verbs.items():
    for v in names:
        if v not in verb_of_section:
            failures.append(f"{page}: the command '{v}' has no '## {v}' section")

global_text = top.get("GLOBAL OPTIONS", "")
# info and reload share one helper; verb_job_action serves five verbs.
extra_funcs = {"no_arguments": ["info", "reload"]}
for path in sorted(os.listdir(os.path.join(src, "cli"))):
    if not path.endswith(".c"):
        continue
    for fn, opts in getopt_tables("cli/" + path):
        if fn == "corral_run":
            for l, s in opts:
                check(page, "GLOBAL OPTIONS", global_text, l, s)
            continue
        served = verbs.get(fn) or extra_funcs.get(fn)
        if not served:
            failures.append(f"cli/{path}: cannot tell which command the option table of {fn}() serves")
            continue
        text = "".join(verb_secs.get(verb_of_section.get(v, ""), "") for v in served)
        for l, s in opts:
            if l in ("help", "json"):  # every command's: GLOBAL OPTIONS says so
                check(page, "GLOBAL OPTIONS", global_text, l, None)
                continue
            check(page, "the section of " + "/".join(served), text, l, s)

submit_text = verb_secs.get(verb_of_section.get("submit", ""), "")
so = read("cli/submit-options.c")
_, table = c_block(so, r"static const SubmitOption options\[\]\s*=\s*\{")[0]
n_submit = 0
for m in re.finditer(r'\{\s*"([\w-]+)"\s*,\s*(\'(.)\'|0)\s*,\s*\w+\s*,\s*(\w+)', table):
    long_name, short, field = m.group(1), m.group(3), m.group(4)
    n_submit += 1
    # Options Slurm users carry but Corral refuses: named once, long form.
    check(page, "the submit section", submit_text, long_name,
          None if field == "SUBMIT_FIELD_UNSUPPORTED" else short)
for flag in re.findall(r'streq\(a, "--([\w-]+)"\)', read("cli/submit.c")):
    if flag in ("help", "json"):
        check(page, "GLOBAL OPTIONS", global_text, flag)
    else:
        check(page, "the submit section", submit_text, flag)
if n_submit < 10:
    failures.append("cli/submit-options.c: the option table was not found (the test's parser needs updating)")

# --- corrald(8), corral-sim(1) ------------------------------------------------------
for page, path in (("man/corrald.8.scd", "daemon/corrald.c"), ("man/corral-sim.1.scd", "sim/corral-sim.c")):
    text = read(page)
    for fn, opts in getopt_tables(path):
        for l, s in opts:
            if l in ("help", "version") and page.endswith("corrald.8.scd"):
                continue  # corrald is started by systemd; --help and --version are courtesy
            check(page, "the page", text, l, s)

# --- corral.conf(5), corral-projects(5) ---------------------------------------------
n_keys = 0
for page, path in (("man/corral.conf.5.scd", "config/config.c"), ("man/corral-projects.5.scd", "config/projects.c")):
    if not os.path.exists(os.path.join(src, page)):
        failures.append(f"{page} is missing")
        continue
    text, code = read(page), read(path)
    secs = sections(text, "#")
    macro_section = dict(re.findall(r'#define (\w+)\(k, [^)]*\)\s+\w+\("(\w+)"', code))
    for _, block in c_block(code, r"static const \w+ items\[\]\s*=\s*\{"):
        for m in re.finditer(r'\b(\w+)\("(\w+)"', block):
            macro, key = m.groups()
            section = macro_section.get(macro)
            if not section:
                continue
            n_keys += 1
            body = "".join(t for h, t in secs.items() if f"[{section}]" in h)
            if not body:
                failures.append(f"{page}: no '# [{section}] SECTION' heading for the keys of {path}")
                break
            if not re.search(r"\*[^*\n]*\b" + re.escape(key) + r"=", body):
                failures.append(f"{page}: [{section}] {key}= (from {path}) is not documented in its section")
    # The default corral.conf the package installs lists every key of corral.conf, too.
    if path == "config/config.c":
        shipped = read("debian/corral.conf")
        for _, block in c_block(code, r"static const \w+ items\[\]\s*=\s*\{"):
            for m in re.finditer(r'\b(\w+)\("(\w+)"', block):
                if macro_section.get(m.group(1)) and not re.search(r"^#" + m.group(2) + "=", shipped, re.M):
                    failures.append(f"debian/corral.conf: {m.group(2)}= is missing")
if n_keys < 15:
    failures.append(f"only {n_keys} configuration keys were found: the test's parser needs updating")

# --- corral-slurm(7): the Slurm front ends of slurm/ --------------------------------
# sbatch and srun parse with the submit table itself, so the page lists the table (every
# option, the refused ones under what is refused) and sbatch's own client flags; each
# other tool its getopt table; squeue, sinfo and sacct their field tables.
page = "man/corral-slurm.7.scd"
if not os.path.exists(os.path.join(src, page)):
    failures.append(f"{page} is missing")
else:
    scd = read(page)
    tool_secs = sections(scd, "##")
    tools = re.findall(r"'(\w+)'", re.search(r"foreach tool : \[([^]]*)\]", read("slurm/meson.build")).group(1))
    if len(tools) < 8:
        failures.append("slurm/meson.build: the list of tools was not found (the test's parser needs updating)")
    for t in tools:
        if t not in tool_secs:
            failures.append(f"{page}: the command '{t}' has no '## {t}' section")
    table = read("cli/submit-options.c")
    names = [m.group(1) for _, b in c_block(table, r"static const SubmitOption options\[\]\s*=\s*\{")
             for m in re.finditer(r'\{\s*"([\w-]+)",', b)]
    if len(names) < 40:
        failures.append("cli/submit-options.c: the option table was not found (the test's parser needs updating)")
    for t in ("sbatch", "srun"):
        for n in names:
            check(page, f"the {t} section", tool_secs.get(t, ""), n)
    for flag in re.findall(r'is_long\(a, "([\w-]+)"\)', read("cli/submit.c")):
        check(page, "the sbatch section", tool_secs.get("sbatch", ""), flag)
    for t in tools:
        for func, opts in getopt_tables(f"slurm/{t}.c"):
            for l, sh in opts:
                check(page, f"the {t} section", tool_secs.get(t, ""), l, sh)
    fmt = read("slurm/slurm-format.c")
    for what, tool, start in (("squeue", "squeue", r"squeue_fields\[\]\s*=\s*\{"),
                              ("sinfo", "sinfo", r"sinfo_fields\[\]\s*=\s*\{")):
        for _, b in c_block(fmt, start):
            for m in re.finditer(r"\{ '(.)', \"([^\"]+)\"(?:, \"(\w+)\")?", b):
                # A digit marks an -O name with no -o letter of its own.
                if not m.group(1).isdigit() and "*%" + m.group(1) + "*" not in tool_secs.get(tool, ""):
                    failures.append(f"{page}: {what} field %{m.group(1)} is not documented in the {tool} section")
                if m.group(3) and "*" + m.group(3) + "*" not in tool_secs.get(tool, ""):
                    failures.append(f"{page}: squeue -O field {m.group(3)} is not documented in the {tool} section")
    for _, b in c_block(fmt, r"sacct_fields\[\]\s*=\s*\{"):
        for m in re.finditer(r'\{ "(\w+)", -?\d+ \}', b):
            if "*" + m.group(1) + "*" not in tool_secs.get("sacct", ""):
                failures.append(f"{page}: sacct field {m.group(1)} is not documented in the sacct section")

for f in failures:
    print(f)
if failures:
    print(f"{len(failures)} missing from the man pages")
    sys.exit(1)
print(f"ok: every verb, option and configuration key ({n_keys} keys) is documented")
PY

# --- the default corral.conf, every key uncommented, is one corrald accepts ------------
if [ -n "$build" ] && [ -x "$build/cli/corral" ]; then
    conf=$(mktemp -d)
    sed 's/^#\([A-Za-z]*=\)/\1/; s/^#\[Queue\]/[Queue]/; s/^#\[Device\]/[Device]/' "$src/debian/corral.conf" >"$conf/corral.conf"
    if ! out=$("$build/cli/corral" config check "$conf" 2>&1); then
        echo "$out"
        echo "debian/corral.conf with every key uncommented is not a valid configuration"
        rm -rf "$conf"
        exit 1
    fi
    cp "$src/debian/corral.conf" "$conf/corral.conf"
    "$build/cli/corral" config check "$conf" >/dev/null 2>&1 || { echo "debian/corral.conf as shipped is not valid"; rm -rf "$conf"; exit 1; }
    rm -rf "$conf"
    echo "ok: debian/corral.conf is valid, as shipped and with every key set"
fi

# --- lint of the built pages ------------------------------------------------------------
[ -n "$build" ] && [ -d "$build/man" ] || { echo "no built man pages (CORRAL_BUILDDIR): lint skipped"; exit 0; }
pages=("$build"/man/*.[1578])
[ -e "${pages[0]}" ] || { echo "no built man pages in $build/man (scdoc missing?): lint skipped"; exit 0; }
rc=0
linted=0
if command -v mandoc >/dev/null; then
    # scdoc puts .PP where mandoc sees nothing to separate; that is all it may say.
    out=$(mandoc -Tlint -W warning "${pages[@]}" 2>&1 | grep -v 'skipping paragraph macro' || true)
    if [ -n "$out" ]; then echo "$out"; echo "mandoc -Tlint: warnings above"; rc=1; fi
    linted=1
fi
if command -v man >/dev/null && command -v groff >/dev/null; then
    for p in "${pages[@]}"; do
        out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$p" 2>&1 >/dev/null || true)
        if [ -n "$out" ]; then echo "$p: $out"; echo "man --warnings: warnings above"; rc=1; fi
    done
    linted=1
fi
if [ $linted = 0 ]; then
    echo "neither mandoc nor man with groff: lint not run"
    [ "${CORRAL_TEST_STRICT:-0}" = 1 ] && exit 1
    exit 77
fi
[ $rc = 0 ] && echo "ok: ${#pages[@]} man pages lint-clean"
exit $rc
