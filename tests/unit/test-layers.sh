#!/bin/bash
# The layer guard: docs/ARCHITECTURE.md's table says which directory may use which, and
# this reads it and fails on
#   layer       an `#include "…"` or a meson.build link_with/dependencies that goes up a
#               layer, or beside or below it to a directory its row does not name
#   no-row      a directory with C files and no row
#   tier        inside daemon/, an `#include "…"` of a header of the same tier or a higher
#               one in the table under "## The daemon's tiers" (tier 0 may include tier 0)
#   tier-row    a daemon/ .c or .h the tiers do not name
#   cycle       two files with code each including the other's header (a.c or a.h includes
#               b.h while b.c or b.h includes a.h); a file the tiers name with its
#               extension (manager.h, manager.c) is a node of its own, not one with its twin
#   own-header  a header declaring a function that a .c of another name defines (a header
#               declares only its own file), or, for a face the "Faces:" line under
#               "## Rules" names, a .c outside the face's directory
# naming FILE:LINE and the rule. A quoted include is resolved as the compiler does: the
# including file's folder, then the folders meson.build's include_directories() name.
# tests/ and bench/ may use anything and are not checked; nothing may use them.
#
#   test-layers.sh            fail on any breach (the unit suite runs it so)
#   test-layers.sh --report   list every breach and each header's own-header count, exit 0
#
# It first proves on planted breaches, in a small tree and in a copy of the real one, that
# each rule can fail: a guard that passes everything is worse than none.
# shellcheck disable=SC2016  # the plants' backticks are markdown's, not the shell's
set -euo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
report=0
case "${1:-}" in
--report) report=1 ;;
"") ;;
*) echo "usage: $0 [--report]" >&2; exit 2 ;;
esac

# The reader (POSIX awk: mawk or gawk). Its inputs, in this order: the tree's .c, .h and
# meson.build files (one a line), the tables' page, the meson.build files (the top-level one
# first), the .c and .h files. It prints "RULE: FILE:LINE: what" per breach, and with
# -v counts=1 "count: HEADER N" per header with own-header breaches.
read -r -d '' reader <<'AWK' || true
function dirof(p,   i) {
        i = index(p, "/")
        return i ? substr(p, 1, i - 1) : "."
}

function parent(p,   n) {
        n = p
        sub(/\/[^\/]*$/, "", n)
        return n == p ? "." : n
}

function stem(p) {
        sub(/\.[ch]$/, "", p)
        return p
}

# a/b/../c/./d -> a/c/d
function normpath(p,   parts, n, i, out, k, st) {
        n = split(p, parts, "/")
        k = 0
        for (i = 1; i <= n; i++) {
                if (parts[i] == "" || parts[i] == ".")
                        continue
                if (parts[i] == ".." && k > 0) {
                        k--
                        continue
                }
                st[++k] = parts[i]
        }
        out = ""
        for (i = 1; i <= k; i++)
                out = out (i > 1 ? "/" : "") st[i]
        return out == "" ? "." : out
}

function exempt(d) {
        return d in anything
}

# ---- the table: the first one under "## Layers" ----------------------------------------
function table_line(line,   cells, n, c, dirs, nd, i, j, uses, nu, lay) {
        n = split(line, cells, "|")
        # "| a | b | c |" splits into "", " a ", " b ", " c ", ""
        if (n < 5 || cells[2] ~ /^[ \t]*(layer|-+|:?-+:?)[ \t]*$/)
                return
        lay = cells[2]
        gsub(/[ \t]/, "", lay)
        nd = 0
        c = cells[3]
        while (match(c, /`[^`]*\/`/)) {
                dirs[++nd] = substr(c, RSTART + 1, RLENGTH - 3)
                c = substr(c, RSTART + RLENGTH)
        }
        for (i = 1; i <= nd; i++) {
                if (dirs[i] in layer) {
                        print "table: docs/ARCHITECTURE.md:" FNR ": " dirs[i] "/ has a second row"
                        continue
                }
                layer[dirs[i]] = lay
                rows++
                if (cells[4] ~ /anything/) {
                        anything[dirs[i]] = 1
                        continue
                }
                c = cells[4]
                while (match(c, /`[^`]*\/`/)) {
                        may[dirs[i], substr(c, RSTART + 1, RLENGTH - 3)] = 1
                        rowuses[dirs[i]] = rowuses[dirs[i]] " " substr(c, RSTART + 1, RLENGTH - 2)
                        c = substr(c, RSTART + RLENGTH)
                }
        }
}

# Directories a link of D may name: its row, and what those rows reach.
function reach(   changed, k, parts, a, b) {
        for (k in may) {
                split(k, parts, SUBSEP)
                lnk[parts[1], parts[2]] = 1
        }
        do {
                changed = 0
                for (k in lnk) {
                        split(k, parts, SUBSEP)
                        a = parts[1]
                        for (b in layer)
                                if (((parts[2], b) in may) && !((a, b) in lnk)) {
                                        lnk[a, b] = 1
                                        changed = 1
                                }
                }
        } while (changed)
}

# ---- the daemon's tiers: the first table under "## The daemon's tiers" -------------------
# `name` is daemon/name.c and daemon/name.h; `name.h` or `name.c` that one file, which is
# then a node of its own in the cycle rule.
function tier_set(f, t, nm) {
        if (f in tierof) {
                print "table: docs/ARCHITECTURE.md:" FNR ": " nm " has a second row in the tiers"
                return
        }
        tierof[f] = t
}

function tier_line(line,   cells, n, c, t, nm) {
        n = split(line, cells, "|")
        if (n < 5 || cells[2] ~ /^[ \t]*(tier|-+|:?-+:?)[ \t]*$/)
                return
        t = cells[2]
        gsub(/[ \t]/, "", t)
        if (t !~ /^[0-9]+$/) {
                print "table: docs/ARCHITECTURE.md:" FNR ": tier \"" t "\" is not a number"
                return
        }
        tierrows++
        c = cells[3]
        while (match(c, /`[^`]*`/)) {
                nm = substr(c, RSTART + 1, RLENGTH - 2)
                c = substr(c, RSTART + RLENGTH)
                tiername_line[nm] = FNR
                if (nm ~ /\.[ch]$/) {
                        tier_set(TIERDIR "/" nm, t, nm)
                        splitf[TIERDIR "/" nm] = 1
                } else {
                        tier_set(TIERDIR "/" nm ".c", t, nm)
                        tier_set(TIERDIR "/" nm ".h", t, nm)
                }
        }
}

# Whether a name in the tiers names a file: itself, or with .c or .h.
function tier_named(p) {
        if (p ~ /\.[ch]$/)
                return p in known
        return ((p ".c") in known) || ((p ".h") in known)
}

# ---- the faces: "Faces: `dir/x.h` …" under "## Rules", up to a blank line or the next item --
function faces_line(line,   c) {
        c = line
        if (!facesopen) {
                if (c !~ /Faces:/)
                        return
                sub(/.*Faces:/, "", c)
                facesopen = 1
        } else if (c ~ /^[ \t]*$/ || c ~ /^[ \t]*[-*] /) {
                facesopen = 0
                return
        }
        while (match(c, /`[^`]*`/)) {
                face[substr(c, RSTART + 1, RLENGTH - 2)] = FNR
                c = substr(c, RSTART + RLENGTH)
        }
}

# The cycle rule's node of file F: its stem (a.c and a.h are one), or F itself where the
# tiers name it with its extension.
function node(f) {
        return (f in splitf) ? f : stem(f)
}

function hascode(n) {
        return (n in hasc) || (n in splitf)
}

function uses_list(d) {
        return (d in rowuses) ? rowuses[d] : " nothing"
}

# Why FROM may not use TO, or "" when it may. LINK: a link, which may also reach further.
function breach(from, to, link) {
        if (from == to || exempt(from) || from == ".")
                return ""
        if (!(from in layer))
                return ""       # reported once as no-row
        if (link ? ((from, to) in lnk) : ((from, to) in may))
                return ""
        if (!(to in layer))
                return to "/ has no row in docs/ARCHITECTURE.md"
        if (layer[to] ~ /^[0-9]+$/ && layer[from] ~ /^[0-9]+$/) {
                if (layer[to] + 0 > layer[from] + 0)
                        return "up a layer: " from "/ (layer " layer[from] ") may not use " to "/ (layer " layer[to] ")"
                if (layer[to] + 0 == layer[from] + 0)
                        return "sideways: " from "/ and " to "/ are both layer " layer[from] " and its row does not name it"
        }
        return "outside its row: " from "/ may use" uses_list(from) (link ? " (and what they link)" : "") \
               ", not " to "/"
}

# ---- meson.build ------------------------------------------------------------------------
function meson_strip(s,   i, c, q, out) {
        out = ""
        q = 0
        for (i = 1; i <= length(s); i++) {
                c = substr(s, i, 1)
                if (c == "'")
                        q = !q
                if (c == "#" && !q)
                        break
                out = out c
        }
        return out
}

# The words of a link_with/dependencies value, which may span lines: pend_kind holds what
# is being read, pend_depth the brackets still open.
function meson_value(s,   c, i, w) {
        i = 1
        while (i <= length(s) && pend_kind != "") {
                c = substr(s, i, 1)
                if (c ~ /[A-Za-z_]/) {
                        w = c
                        while (i < length(s) && substr(s, i + 1, 1) ~ /[A-Za-z0-9_]/)
                                w = w substr(s, ++i, 1)
                        nlinks++
                        link_file[nlinks] = FILENAME_REL
                        link_line[nlinks] = FNR
                        link_var[nlinks] = w
                        link_dep[nlinks] = (pend_kind == "dep")
                        if (pend_depth == 0)
                                pend_kind = ""
                } else if (c == "[") {
                        pend_depth++
                } else if (c == "]") {
                        if (--pend_depth <= 0)
                                pend_kind = ""
                } else if (c == "(" || c == "," && pend_depth == 0) {
                        pend_kind = ""  # a call or the next argument: not a plain list
                }
                i++
        }
}

function meson_line(raw,   s, name, rest, c, q) {
        s = meson_strip(raw)
        if (pend_kind != "") {
                meson_value(s)
                return
        }
        if (match(s, /^[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*=[ \t]*(static_library|shared_library|both_libraries|library|declare_dependency)[ \t]*\(/)) {
                name = s
                sub(/^[ \t]*/, "", name)
                sub(/[ \t]*=.*/, "", name)
                libdir[name] = MESON_DIR
        }
        # include_directories('a', 'b', ...), on one or several lines
        if (incdir_open || s ~ /include_directories[ \t]*\(/) {
                rest = s
                if (!incdir_open)
                        sub(/.*include_directories[ \t]*\(/, "", rest)
                incdir_open = 1
                while (match(rest, /'[^']*'|\)/)) {
                        c = substr(rest, RSTART, RLENGTH)
                        rest = substr(rest, RSTART + RLENGTH)
                        if (c == ")") {
                                incdir_open = 0
                                if (rest !~ /include_directories[ \t]*\(/)
                                        break
                                sub(/.*include_directories[ \t]*\(/, "", rest)
                                incdir_open = 1
                                continue
                        }
                        q = normpath(MESON_DIR "/" substr(c, 2, length(c) - 2))
                        if (!(q in incseen)) {
                                incseen[q] = 1
                                incpath[++nincs] = q
                        }
                }
        }
        while (pend_kind == "" && match(s, /(link_with|dependencies)[ \t]*:/)) {
                pend_kind = (substr(s, RSTART, 4) == "link") ? "link" : "dep"
                pend_depth = 0
                s = substr(s, RSTART + RLENGTH)
                meson_value(s)
        }
}

# ---- C: comments and strings out, then what stands at file scope -------------------------
function c_clean(s,   i, n, c, q, out, d) {
        if (!incomment && s !~ /[\/"']/)
                return s
        out = ""
        n = length(s)
        i = 1
        while (i <= n) {
                c = substr(s, i, 1)
                if (incomment) {
                        if (c == "*" && substr(s, i + 1, 1) == "/") {
                                incomment = 0
                                out = out " "
                                i += 2
                        } else
                                i++
                        continue
                }
                if (c == "/" && substr(s, i + 1, 1) == "*") {
                        incomment = 1
                        i += 2
                        continue
                }
                if (c == "/" && substr(s, i + 1, 1) == "/")
                        break
                if (c == "\"" || c == "'") {
                        q = c
                        for (i++; i <= n; i++) {
                                d = substr(s, i, 1)
                                if (d == "\\") {
                                        i++
                                        continue
                                }
                                if (d == q)
                                        break
                        }
                        out = out q q
                        i++
                        continue
                }
                out = out c
                i++
        }
        return out
}

function c_reset() {
        name = ""
        haseq = 0
        istypedef = 0
        isstatic = 0
        nwords = 0
        lastid = ""
        lasttok = ""
        pd = 0
}

function emit(kind) {
        if (name == "" || haseq || istypedef)
                return
        if (kind == "def") {
                if (FILE_KIND == "c" && !isstatic) {
                        defs[name] = defs[name] SUBSEP stem(FILENAME_REL)
                }
        } else if (FILE_KIND == "h" && !isstatic) {
                ndecls++
                decl_file[ndecls] = FILENAME_REL
                decl_line[ndecls] = nameline
                decl_name[ndecls] = name
        }
}

function c_structure(s,   i, j, n, c, id) {
        n = length(s)
        i = 1
        while (i <= n) {
                c = substr(s, i, 1)
                if (c ~ /[A-Za-z_]/) {
                        for (j = i + 1; j <= n && substr(s, j, 1) ~ /[A-Za-z0-9_]/; j++)
                                ;
                        id = substr(s, i, j - i)
                        i = j
                        if (depth == 0 && pd == 0) {
                                if (nwords++ == 0 && id == "typedef")
                                        istypedef = 1
                                if (id == "static")
                                        isstatic = 1
                        }
                        lastid = (id in keyword || id ~ /^_[A-Za-z0-9_]*_$/) ? "" : id
                        lasttok = "id"
                        continue
                }
                if (c == " " || c == "\t") {
                        i++
                        continue
                }
                if (depth == 0) {
                        if (c == "(") {
                                # the last name called at depth 0 is the function's:
                                # `_printf_(1, 2) int f(` and `MACRO(x) int f(` give f
                                if (pd == 0 && lastid != "") {
                                        name = lastid
                                        nameline = FNR
                                }
                                pd++
                        } else if (c == ")") {
                                if (pd > 0)
                                        pd--
                        } else if (c == "=" && pd == 0) {
                                haseq = 1
                        } else if (c == ";" && pd == 0) {
                                emit("decl")
                                c_reset()
                        } else if (c == "{") {
                                if (pd == 0 && lasttok == ")")
                                        emit("def")
                                c_reset()
                                depth = 1
                        }
                } else if (c == "{") {
                        depth++
                } else if (c == "}") {
                        if (--depth == 0)
                                c_reset()
                }
                lastid = ""
                lasttok = c
                i++
        }
}

function resolve(inc, from,   k, p) {
        p = normpath(parent(from) "/" inc)
        if (p in known)
                return p
        for (k = 1; k <= nincs; k++) {
                p = normpath(incpath[k] "/" inc)
                if (p in known)
                        return p
        }
        return ""
}

function c_line(raw,   was, s, inc, to) {
        was = incomment
        s = c_clean(raw)
        if (ppcont) {
                ppcont = (raw ~ /\\$/)
                return
        }
        if (!was && s ~ /^[ \t]*#/) {
                ppcont = (raw ~ /\\$/)
                if (match(raw, /^[ \t]*#[ \t]*include[ \t]*"[^"]*"/)) {
                        inc = substr(raw, RSTART, RLENGTH)
                        sub(/^[^"]*"/, "", inc)
                        sub(/"$/, "", inc)
                        to = resolve(inc, FILENAME_REL)
                        if (to != "") {
                                nincl++
                                incl_file[nincl] = FILENAME_REL
                                incl_line[nincl] = FNR
                                incl_to[nincl] = to
                        }
                }
                return
        }
        c_structure(s)
}

BEGIN {
        split("auto bool _Bool char const double enum extern float inline int long register restrict " \
              "return short signed sizeof static struct switch typedef typeof __typeof__ union " \
              "unsigned void volatile while for if _Alignof alignof _Alignas alignas _Atomic " \
              "_Generic _Noreturn _Static_assert static_assert __attribute__ __attribute " \
              "__extension__ __inline__ __restrict__ __asm__ asm", kw, " ")
        for (k in kw)
                keyword[kw[k]] = 1
        TIERDIR = "daemon"      # the directory "## The daemon's tiers" orders
}

FNR == 1 {
        nfile++
        FILENAME_REL = FILENAME
        FILE_KIND = ""
        if (nfile == 1)
                FILE_KIND = "list"
        else if (FILENAME_REL == "docs/ARCHITECTURE.md")
                FILE_KIND = "doc"
        else if (FILENAME_REL ~ /(^|\/)meson\.build$/)
                FILE_KIND = "meson"
        else if (FILENAME_REL ~ /\.c$/)
                FILE_KIND = "c"
        else if (FILENAME_REL ~ /\.h$/)
                FILE_KIND = "h"
        MESON_DIR = parent(FILENAME_REL)
        intable = 0
        section = ""
        incomment = 0
        ppcont = 0
        depth = 0
        pend_kind = ""
        incdir_open = 0
        c_reset()
        if (FILE_KIND == "c")
                hasc[stem(FILENAME_REL)] = 1
        if (FILE_KIND == "c" || FILE_KIND == "h") {
                d = dirof(FILENAME_REL)
                if (!(d in layer) && !(d in norow)) {
                        norow[d] = FILENAME_REL
                }
        }
}

FILE_KIND == "list" {
        known[$0] = 1
        next
}

FILE_KIND == "doc" {
        if ($0 ~ /^## /) {
                section = ""
                if ($0 ~ /^## Layers[ \t]*$/)
                        section = "layers"
                else if ($0 ~ /^## The daemon's tiers[ \t]*$/)
                        section = "tiers"
                else if ($0 ~ /^## Rules[ \t]*$/)
                        section = "rules"
                intable = 0
                facesopen = 0
                next
        }
        if (section == "rules")
                faces_line($0)
        if (section != "" && !(section in tabledone) && $0 ~ /^\|/) {
                intable = 1
                if (section == "layers")
                        table_line($0)
                else if (section == "tiers")
                        tier_line($0)
        } else if (intable) {
                tabledone[section] = 1
                intable = 0
        }
        next
}

FILE_KIND == "meson" {
        meson_line($0)
        next
}

FILE_KIND == "c" || FILE_KIND == "h" {
        c_line($0)
}

END {
        if (rows == 0) {
                print "table: docs/ARCHITECTURE.md: no table under \"## Layers\""
                exit
        }
        reach()
        for (d in norow)
                print "no-row: " norow[d] ":1: " d "/ has code and no row in docs/ARCHITECTURE.md's table"

        for (k = 1; k <= nincl; k++) {
                from = dirof(incl_file[k])
                to = dirof(incl_to[k])
                why = breach(from, to, 0)
                if (why != "")
                        print "layer: " incl_file[k] ":" incl_line[k] ": includes " incl_to[k] ": " why
        }
        for (k = 1; k <= nlinks; k++) {
                v = link_var[k]
                if (!(v in libdir))
                        continue        # not one of the tree's libraries
                from = dirof(link_file[k])
                to = dirof(libdir[v] "/x")
                why = breach(from, to, 1)
                if (why != "")
                        print "layer: " link_file[k] ":" link_line[k] ": " (link_dep[k] ? "depends on " : "links ") \
                              v " (" libdir[v] "/): " why
        }

        # tier: inside daemon/, an include goes down the tiers (tier 0 may use tier 0)
        for (f in known)
                if (f ~ /\.[ch]$/ && parent(f) == TIERDIR)
                        ntierfiles++
        if (ntierfiles && !tierrows)
                print "table: docs/ARCHITECTURE.md:1: no table under \"## The daemon's tiers\""
        if (tierrows) {
                for (nm in tiername_line)
                        if (!tier_named(TIERDIR "/" nm))
                                print "table: docs/ARCHITECTURE.md:" tiername_line[nm] ": " nm " in the tiers names no file in " TIERDIR "/"
                for (f in known)
                        if (f ~ /\.[ch]$/ && parent(f) == TIERDIR && !(f in tierof))
                                print "tier-row: " f ":1: " f " has no row in docs/ARCHITECTURE.md's tiers"
                for (k = 1; k <= nincl; k++) {
                        a = incl_file[k]
                        b = incl_to[k]
                        if (parent(a) != TIERDIR || parent(b) != TIERDIR || stem(a) == stem(b))
                                continue
                        if (!(a in tierof) || !(b in tierof))
                                continue        # reported once as tier-row
                        ta = tierof[a] + 0
                        tb = tierof[b] + 0
                        if (ta > tb || ta == 0 && tb == 0)
                                continue
                        print "tier: " a ":" incl_line[k] ": includes " b " (tier " tb ") from tier " ta ": " \
                              (ta < tb ? "up the tiers" : "the same tier, which only tier 0 may include") \
                              "; a file includes only lower tiers' headers"
                }
        }

        # cycle: file a (a.c or a.h) includes b.h while file b includes a.h, outside tests/bench.
        # A file the tiers name with its extension (manager.h, manager.c) is a node of its own.
        for (k = 1; k <= nincl; k++) {
                a = node(incl_file[k])
                b = node(incl_to[k])
                # both sides files with code: a header alone (sched-internal.h) calls nothing
                if (a == b || exempt(dirof(a)) || exempt(dirof(b)) || !hascode(a) || !hascode(b))
                        continue
                if (!((a, b) in edge)) {
                        edge[a, b] = incl_file[k] ":" incl_line[k]
                        edge_to[a, b] = incl_to[k]
                }
        }
        for (k in edge) {
                split(k, ab, SUBSEP)
                if (ab[1] < ab[2] && ((ab[2], ab[1]) in edge))
                        print "cycle: " edge[k] ": includes " edge_to[k] " while " edge[ab[2], ab[1]] \
                              " includes " edge_to[ab[2], ab[1]]
        }

        # own-header: a header declaring a function that another file's .c defines; a face
        # (named under "## Rules") may declare its own directory's
        for (h in face)
                if (!(h in known) || h !~ /\.h$/)
                        print "table: docs/ARCHITECTURE.md:" face[h] ": the face " h " is not a header in the tree"
        for (k = 1; k <= ndecls; k++) {
                h = decl_file[k]
                if (exempt(dirof(h)) || !(decl_name[k] in defs))
                        continue
                n = split(substr(defs[decl_name[k]], 2), where, SUBSEP)
                own = 0
                list = ""
                for (j = 1; j <= n; j++) {
                        if (where[j] == stem(h) || (h in face) && parent(where[j]) == parent(h))
                                own = 1
                        list = list (j > 1 ? ", " : "") where[j] ".c"
                }
                if (!own) {
                        print "own-header: " h ":" decl_line[k] ": declares " decl_name[k] "(), defined in " list \
                              ((h in face) ? " (a face declares only its own directory's files)" : "")
                        hits[h]++
                }
        }
        if (counts)
                for (h in hits)
                        print "count: " h " " hits[h]
}
AWK

# Prints the tree's .c, .h and meson.build files, relative to $1 (the current directory),
# sorted; build directories (a build.ninja or meson-private/ in them) are no part of it.
tree_files() {
        local d
        local -a dirs=()
        for d in */; do
                d=${d%/}
                [ -e "$d/build.ninja" ] || [ -d "$d/meson-private" ] || dirs+=("$d")
        done
        [ ! -f meson.build ] || echo meson.build
        [ ${#dirs[@]} = 0 ] ||
                find "${dirs[@]}" -type f \( -name '*.[ch]' -o -name meson.build \) | LC_ALL=C sort
}

# Prints every breach in the tree at $1 (and with $2 = 1 the counts), sorted by rule, file
# and line; prints nothing for a tree that keeps every rule.
scan() {
        local counts=${2:-0} f
        local -a files=() meson=() code=()
        (
                cd "$1"
                [ -f docs/ARCHITECTURE.md ] || { echo "table: docs/ARCHITECTURE.md:1: missing"; exit 0; }
                mapfile -t files < <(tree_files)
                for f in "${files[@]}"; do
                        case $f in
                        meson.build) ;;
                        *meson.build) meson+=("$f") ;;
                        *) code+=("$f") ;;
                        esac
                done
                awk -v counts="$counts" "$reader" <(printf '%s\n' "${files[@]}") docs/ARCHITECTURE.md \
                        meson.build "${meson[@]}" "${code[@]}" |
                        LC_ALL=C sort -t: -k1,1 -k2,2 -k3,3n
        )
}

# expect TREE RULE FILE:LINE WHAT: the scan of TREE must report RULE at FILE:LINE.
expect() {
        local out
        out=$(scan "$1")
        if ! grep -qF "$2: $3: " <<<"$out"; then
                echo "self-test: $4 was not reported as '$2: $3: …'; the scan said:" >&2
                echo "${out:-(nothing)}" >&2
                exit 1
        fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- self-test 1: a small tree that keeps every rule, then one breach of each at a time ----
t=$tmp/small
mkdir -p "$t"/{docs,base,core,wire,app,daemon,tests,build}
cat >"$t/docs/ARCHITECTURE.md" <<'MD'
# A tree

## Layers
| layer | directory | may use | what |
|---|---|---|---|
| 0 | `base/` | — | |
| 1 | `core/` | `base/` | |
| 1 | `wire/` | `base/` | |
| 2 | `app/` | `core/`, `wire/`, `base/` | |
| 2 | `daemon/` | `base/` | |
| – | `tests/`, `bench/` | anything | |

## Rules
- A header declares only its own file. Faces are the exception,
  Faces: `wire/wire.h`
  `base/util.h`
- Calls go down, and the faces end at the next item:
  `core/core.h` is no face.

## The daemon's tiers
| tier | files | what |
|---|---|---|
| 0 | `svc` `log` | services |
| 1 | `hub.h` | the type |
| 2 | `feat` `aux` | features |
| 3 | `hub.c` `main` | the root |

Only the first table under the heading is the rule:

| tier | files | what |
|---|---|---|
| 9 | `svc` | |

## Another section, whose table is not the rule
| layer | directory | may use |
|---|---|---|
| 2 | `app/` | `tests/` |
| 0 | `base/` | `app/` |

Faces: `core/core.h`
MD
cat >"$t/meson.build" <<'M'
incs = include_directories('.', 'base',
                           'core')   # 'app' is not on the path
subdir('base')
M
cat >"$t/base/meson.build" <<'M'
libbase = static_library('base', 'util.c', include_directories : incs)
M
cat >"$t/core/meson.build" <<'M'
libcore = static_library('core', 'core.c',
        include_directories : [incs, include_directories('../wire')],
        link_with : libbase)
core_dep = declare_dependency(link_with : [libcore, libbase])
unit_tests += [['test-core', files('../tests/t.c'), [libcore, libapp], []]]
M
cat >"$t/wire/meson.build" <<'M'
libwire = static_library('wire', 'wire.c', link_with : [libbase])
M
cat >"$t/app/meson.build" <<'M'
libapp = static_library('app', 'a.c', 'b.c',
        link_with : [libcore,   # the core
                     libwire,
                     libbase],
        dependencies : [core_dep, jsonc])
M
cat >"$t/tests/meson.build" <<'M'
executable('t', 't.c', link_with : [libapp, libcore])
M
cat >"$t/base/util.h" <<'C'
#pragma once
#include <stdio.h>
typedef int (*util_cb)(void *userdata);
typedef struct UtilOps {
        int (*run)(void *userdata);
        void (*done)(void *userdata, int r);
} UtilOps;
struct Util *util_new(const UtilOps *ops,
                      void *userdata);
_printf_(1, 2) int util_log(const char *format, ...);
int util_max(int a, int b) _pure_;
extern int (*util_hook)(int);
DEFINE_CLEANUP(struct Util *, util_free);
static inline int util_min(int a, int b) {
        return a < b ? a : b;
}
#define UTIL_CALL(x) \
        core_run(x)
C
cat >"$t/base/util.c" <<'C'
#include "util.h"
#include "config.h"     /* generated: not in the tree */
static int helper(void) { return 0; }
struct Util *util_new(const UtilOps *ops, void *userdata) { return NULL; }
int util_log(const char *format, ...) { return helper(); }
int util_max(int a, int b) {
        return a > b ? a : b;
}
C
cat >"$t/core/core.h" <<'C'
#pragma once
#include "util.h"
int core_run(int x);
C
cat >"$t/core/core.c" <<'C'
#include "core.h"
#include "base/util.h"
/* an include in a comment is none:
#include "app/a.h"
 */
static const char *s = "#include \"app/a.h\"";   // nor in a string: #include "app/a.h"
int core_run(int x) {
        return util_max(x, 0);
}
C
cat >"$t/core/core-more.c" <<'C'
int core_more(void) { return 0; }
C
cat >"$t/wire/wire.h" <<'C'
int wire_send(int x);
int wire_pack(int x);
C
cat >"$t/wire/pack.c" <<'C'
int wire_pack(int x) { return x; }
C
cat >"$t/wire/wire.c" <<'C'
#include "wire.h"
#include "util.h"
int wire_send(int x) { return x; }
C
cat >"$t/app/a.h" <<'C'
#include "b.h"
int a_go(void);
C
cat >"$t/app/a.c" <<'C'
#include "a.h"
#include "core/core.h"
#include "wire.h"
int a_go(void) { return b_go() + core_run(1) + wire_send(2); }
C
cat >"$t/app/b.h" <<'C'
int b_go(void);
C
cat >"$t/app/b.c" <<'C'
#include "b.h"
int b_go(void) { return 0; }
C
cat >"$t/tests/t.c" <<'C'
#include "app/a.h"
#include "b.h"
int a_go(void) { return 1; }
C
# the daemon's tiers: svc and log (tier 0) use each other; hub.h (tier 1) is the type every
# feature takes and hub.c (tier 3) the root that includes the features: no cycle
for f in svc log feat aux; do
        printf 'int %s_go(void);\n' "$f" >"$t/daemon/$f.h"
done
printf '#include "svc.h"\nstruct Hub { int n; };\nint hub_new(void);\n' >"$t/daemon/hub.h"
printf '#include "svc.h"\n#include "log.h"\nint svc_go(void) { return log_go(); }\n' >"$t/daemon/svc.c"
printf '#include "log.h"\nint log_go(void) { return 0; }\n' >"$t/daemon/log.c"
printf '#include "feat.h"\n#include "hub.h"\nint feat_go(void) { return svc_go(); }\n' >"$t/daemon/feat.c"
printf '#include "aux.h"\n#include "hub.h"\n#include "log.h"\nint aux_go(void) { return 0; }\n' >"$t/daemon/aux.c"
printf '#include "hub.h"\n#include "feat.h"\n#include "aux.h"\nint hub_new(void) { return feat_go() + aux_go(); }\n' \
        >"$t/daemon/hub.c"
printf '#include "hub.h"\nint main(void) { return hub_new(); }\n' >"$t/daemon/main.c"
printf '#include "app/a.h"\n' >"$t/build/x.c"
touch "$t/build/build.ninja"

if out=$(scan "$t") && [ -n "$out" ]; then
        echo "self-test: a tree that keeps every rule was reported:" >&2
        echo "$out" >&2
        exit 1
fi

# plant FILE LINE-TEXT: appends a line to a file of the small tree (kept in .orig), and
# unplant puts it back.
plant() { cp "$t/$1" "$t/$1.orig"; printf '%s\n' "$2" >>"$t/$1"; }
unplant() { mv "$t/$1.orig" "$t/$1"; }

plant core/core.c '#include "app/a.h"'
expect "$t" layer core/core.c:10 "an include up a layer"
grep -q 'up a layer' <<<"$(scan "$t")" || { echo "self-test: an include up a layer not called so" >&2; exit 1; }
unplant core/core.c
plant wire/wire.c '#include "core.h"'
expect "$t" layer wire/wire.c:4 "an include beside (core.h, found through include_directories)"
unplant wire/wire.c
plant base/util.c '#include "tests/helper.h"'
touch "$t/tests/helper.h"
expect "$t" layer base/util.c:9 "an include of tests/"
unplant base/util.c
plant core/meson.build "libcore2 = static_library('core2', link_with : [libbase,"
printf '        libapp])\n' >>"$t/core/meson.build"
expect "$t" layer core/meson.build:7 "a link up a layer, on a list's second line"
unplant core/meson.build
plant wire/meson.build "w = executable('w', link_with : libbase, dependencies : core_dep)"
expect "$t" layer wire/meson.build:2 "a dependency on a library beside, after a link_with on its line"
unplant wire/meson.build
plant app/b.c '#include "a.h"'
expect "$t" cycle app/a.h:1 "a.h including b.h while b.c includes a.h"
unplant app/b.c
for decl in 'int util_max(int a, int b);' '_printf_(1, 2) int util_log(const char *f, ...);' \
            'extern struct Util *util_new(const UtilOps *ops,' 'DEFINE_CLEANUP(Util *, x); int util_max(int a, int b);'; do
        plant core/core.h "$decl"
        printf '        void *userdata);\n' >>"$t/core/core.h"
        expect "$t" own-header core/core.h:4 "'$decl' in core.h (defined in base/util.c)"
        unplant core/core.h
done
plant core/core.h 'int core_more(void);'
expect "$t" own-header core/core.h:4 "core.h declaring core-more.c's function (core.h is no face: only a decoy section names it)"
unplant core/core.h
plant wire/wire.h 'int util_max(int a, int b);'
expect "$t" own-header wire/wire.h:3 "the face wire.h declaring a function of base/util.c, outside its directory"
unplant wire/wire.h
plant docs/ARCHITECTURE.md ''
sed -i 's/`wire\/wire.h`//' "$t/docs/ARCHITECTURE.md"
expect "$t" own-header wire/wire.h:2 "wire.h declaring pack.c's function once the doc no longer names it a face"
unplant docs/ARCHITECTURE.md
plant docs/ARCHITECTURE.md ''
sed -i 's/`base\/util.h`/`base\/gone.h`/' "$t/docs/ARCHITECTURE.md"
expect "$t" table docs/ARCHITECTURE.md:16 "a face the tree does not have"
unplant docs/ARCHITECTURE.md
mkdir "$t/extra"
printf 'int x;\n' >"$t/extra/x.c"
expect "$t" no-row extra/x.c:1 "a directory with no row"
rm -r "$t/extra"

# the tiers
plant daemon/svc.c '#include "feat.h"'
expect "$t" tier daemon/svc.c:4 "tier 0's svc.c including tier 2's feat.h"
grep -qF 'tier: daemon/svc.c:4: includes daemon/feat.h (tier 2) from tier 0: up the tiers' <<<"$(scan "$t")" ||
        { echo "self-test: an include up the tiers not called so" >&2; exit 1; }
unplant daemon/svc.c
plant daemon/hub.h '#include "feat.h"'
expect "$t" tier daemon/hub.h:4 "hub.h (tier 1) including feat.h (tier 2)"
expect "$t" cycle daemon/feat.c:2 "feat.c including hub.h while hub.h includes feat.h (hub.h a node of its own)"
unplant daemon/hub.h
plant daemon/aux.c '#include "feat.h"'
expect "$t" tier daemon/aux.c:5 "aux.c including feat.h, both tier 2"
grep -qF 'tier: daemon/aux.c:5: includes daemon/feat.h (tier 2) from tier 2: the same tier' <<<"$(scan "$t")" ||
        { echo "self-test: an include in the same tier not called so" >&2; exit 1; }
unplant daemon/aux.c
plant daemon/log.c '#include "svc.h"'
expect "$t" cycle daemon/log.c:3 "log.c including svc.h while svc.c includes log.h (tier 0, which the tiers allow)"
[ "$(scan "$t" | grep -c .)" = 1 ] ||
        { echo "self-test: a cycle in tier 0 reported as more than the cycle:" >&2; scan "$t" >&2; exit 1; }
unplant daemon/log.c
printf 'int x;\n' >"$t/daemon/extra.c"
printf '#include "extra.h"\n' >"$t/daemon/extra.h"
expect "$t" tier-row daemon/extra.c:1 "a daemon .c with no tier"
expect "$t" tier-row daemon/extra.h:1 "a daemon .h with no tier"
rm "$t/daemon/extra.c" "$t/daemon/extra.h"
# without the split, hub.c including feat.h while feat.c includes hub.h is a cycle: the
# split, not something else, is what keeps it out
plant docs/ARCHITECTURE.md ''
sed -i 's/`hub\.h`/`hub`/; s/`hub\.c` //' "$t/docs/ARCHITECTURE.md"
expect "$t" cycle daemon/feat.c:2 "feat.c including hub.h while hub.c includes feat.h, once hub.c and hub.h are one"
unplant docs/ARCHITECTURE.md
plant docs/ARCHITECTURE.md ''
sed -i 's/`hub\.c` `main`/`hub.c` `main` `gone`/' "$t/docs/ARCHITECTURE.md"
expect "$t" table docs/ARCHITECTURE.md:26 "a tier name with no file"
unplant docs/ARCHITECTURE.md
[ -z "$(scan "$t")" ] || { echo "self-test: the small tree did not come back clean" >&2; exit 1; }

# ---- self-test 2: a copy of the real tree with its own tables, and two breaches planted ----
r=$tmp/real
mkdir "$r"
(cd "$src" && { tree_files; echo docs/ARCHITECTURE.md; } | xargs cp --parents -t "$r")
before=$(scan "$r")
n=$(($(wc -l <"$r/sched/sched.c") + 1))
printf '#include "daemon/manager.h"\n' >>"$r/sched/sched.c"
nd=$(($(wc -l <"$r/daemon/job-state.c") + 1))
printf '#include "methods.h"\n' >>"$r/daemon/job-state.c"
after=$(scan "$r")
grep -qF "layer: sched/sched.c:$n: includes daemon/manager.h: up a layer" <<<"$after" ||
        { echo "self-test: sched/sched.c including daemon/manager.h in a copy of the tree was not reported" >&2; exit 1; }
grep -qF "tier: daemon/job-state.c:$nd: includes daemon/methods.h (tier " <<<"$after" ||
        { echo "self-test: daemon/job-state.c including methods.h in a copy of the tree was not reported" >&2; exit 1; }
[ "$(grep -vF -e "sched/sched.c:$n:" -e "daemon/job-state.c:$nd:" <<<"$after")" = "$before" ] ||
        { echo "self-test: two planted includes changed other lines of the report" >&2; exit 1; }

# ---- the real tree ----
out=$(scan "$src" "$report")
if [ "$report" = 1 ]; then
        for rule in table no-row layer tier-row tier cycle own-header; do
                lines=$(grep "^$rule: " <<<"$out" || true)
                echo "== $rule: $(grep -c . <<<"$lines" || true)"
                [ -z "$lines" ] || echo "$lines"
        done
        echo "== own-header, per header:"
        grep '^count: ' <<<"$out" | sed 's/^count: //' | LC_ALL=C sort -k2,2nr -k1,1 || true
        exit 0
fi
if [ -n "$out" ]; then
        echo "$out" >&2
        echo "FAIL: $(grep -c . <<<"$out") breaches of docs/ARCHITECTURE.md's layers and rules (--report lists them by rule)" >&2
        exit 1
fi
echo "ok: every include and link keeps docs/ARCHITECTURE.md's layers and the daemon's tiers; no two files include" \
     "each other's headers; every header declares only its own file, every face only its directory's"
