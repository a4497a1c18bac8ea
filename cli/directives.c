/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "directives.h"
#include "parse-util.h"
#include "proto/constraint.h"
#include "proto/protocol.h"
#include "strv.h"

void directive_errors_done(DirectiveErrors *errs) {
        if (!errs)
                return;
        for (size_t i = 0; i < errs->n; i++) {
                free(errs->items[i].file);
                free(errs->items[i].message);
        }
        errs->items = mfree(errs->items);
        errs->n = 0;
}

char *directive_error_format(const DirectiveError *e) {
        char *s;

        if (asprintf(&s, "%s:%u: %s%s", e->file, e->line, e->warning ? "warning: " : "", e->message) < 0)
                return NULL;
        return s;
}

_printf_(5, 6) static int add_error(DirectiveErrors *errs, const char *file, unsigned line, bool warning,
                                    const char *fmt, ...) {
        DirectiveError *n;
        char *msg, *f;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        f = strdup(file);
        n = reallocarray(errs->items, errs->n + 1, sizeof(DirectiveError));
        if (!f || !n) {
                free(msg);
                free(f);
                if (n)
                        errs->items = n;
                return -ENOMEM;
        }
        errs->items = n;
        errs->items[errs->n++] = (DirectiveError) { .file = f, .line = line, .message = msg, .warning = warning };
        return 0;
}

/* Splits a directive's text into words: whitespace separates, quotes group, an unquoted
 * '#' ends the line. -EINVAL on an unterminated quote. */
static int split_words(const char *s, size_t len, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        const char *p = s, *end = s + len;
        int r;

        for (;;) {
                _cleanup_free_ char *w = NULL;
                size_t n = 0;
                bool have = false;

                while (p < end && isspace((unsigned char) *p))
                        p++;
                if (p >= end || *p == '#')
                        break;
                w = malloc((size_t) (end - p) + 1);
                if (!w)
                        return -ENOMEM;
                while (p < end && !isspace((unsigned char) *p)) {
                        if (*p == '"' || *p == '\'') {
                                char q = *p++;
                                const char *c = memchr(p, q, (size_t) (end - p));
                                if (!c)
                                        return -EINVAL;
                                memcpy(w + n, p, (size_t) (c - p));
                                n += (size_t) (c - p);
                                p = c + 1;
                        } else if (*p == '#' && !have && n == 0)
                                break;
                        else
                                w[n++] = *p++;
                        have = true;
                }
                if (!have)
                        break;
                w[n] = 0;
                r = strv_push(&l, w);
                if (r < 0)
                        return r;
                TAKE_PTR(w);
        }
        *ret = TAKE_PTR(l);
        if (!*ret) {
                *ret = new0(char *, 1);
                if (!*ret)
                        return -ENOMEM;
        }
        return 0;
}

/* ---- PBS ---- */

static int pbs_set(SubmitOptions *o, const char *long_name, const char *arg, char **ret_error) {
        const SubmitOption *opt = submit_option_find_long(long_name, strlen(long_name));

        assert(opt);
        return submit_option_apply(o, opt, arg, SUBMIT_SOURCE_DIRECTIVE, ret_error);
}

_printf_(2, 3) static int pbs_fail(char **ret_error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret_error, fmt, ap);
        va_end(ap);
        return r < 0 ? -ENOMEM : -EINVAL;
}

static int pbs_set_bytes(SubmitOptions *o, uint64_t v, char **ret_error) {
        char buf[32];

        snprintf(buf, sizeof(buf), "%" PRIu64 "B", v);
        return pbs_set(o, "mem", buf, ret_error);
}

static int pbs_set_cpus(SubmitOptions *o, uint64_t v, char **ret_error) {
        char buf[32];

        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return pbs_set(o, "cpus", buf, ret_error);
}

/* v GPUs of type (NULL: any), as --gpus=[TYPE:]N takes them. */
static int pbs_set_gpus(SubmitOptions *o, const char *type, uint64_t v, char **ret_error) {
        char buf[CORRAL_GPU_TYPE_LENGTH_MAX + 32];

        if (v > CORRAL_GPUS_MAX)
                return pbs_fail(ret_error, "more than %u GPUs", CORRAL_GPUS_MAX);
        if (type && strlen(type) > CORRAL_GPU_TYPE_LENGTH_MAX)
                return pbs_fail(ret_error, "select: GPU type longer than %u characters", CORRAL_GPU_TYPE_LENGTH_MAX);
        snprintf(buf, sizeof(buf), "%s%s%" PRIu64, strempty(type), type ? ":" : "", v);
        return pbs_set(o, "gpus", buf, ret_error);
}

/* "select=N:ncpus=C:ngpus=G:mem=M": N chunks, all on this machine. The GPUs' type, where a
 * site defines a resource for it, as gpu_model= or gpu_type= ("ngpus=1:gpu_model=1g.10gb"). */
static int pbs_select(SubmitOptions *o, const char *spec, char **ret_error) {
        _cleanup_strv_free_ char **parts = NULL;
        uint64_t chunks, ncpus = 0, mem = 0, v;
        bool have_gpus = false;
        uint64_t ngpus = 0;
        const char *type = NULL;
        int r;

        if (strchr(spec, '+'))
                return pbs_fail(ret_error, "chunks of different shapes ('+') are not supported");
        r = strv_split(spec, ":", &parts);
        if (r < 0)
                return r;
        if (!parts[0] || safe_atou64(parts[0], &chunks) < 0 || chunks < 1 || chunks > CORRAL_CPUS_MAX)
                return pbs_fail(ret_error, "select: expected a chunk count first");
        for (char **p = parts + 1; *p; p++) {
                const char *eq = strchr(*p, '=');
                if (!eq)
                        return pbs_fail(ret_error, "select: expected NAME=VALUE, got '%s'", *p);
                if (strneq(*p, "ncpus=", 6) || strneq(*p, "mpiprocs=", 9)) {
                        if (safe_atou64(eq + 1, &v) < 0 || v < 1 || v > CORRAL_CPUS_MAX)
                                return pbs_fail(ret_error, "select: invalid %s", *p);
                        if (strneq(*p, "ncpus=", 6))
                                ncpus = v;
                } else if (strneq(*p, "mem=", 4)) {
                        if (parse_size(eq + 1, 1, &mem) < 0 || mem == 0)
                                return pbs_fail(ret_error, "select: invalid %s", *p);
                } else if (strneq(*p, "ngpus=", 6)) {
                        if (safe_atou64(eq + 1, &ngpus) < 0 || ngpus > CORRAL_GPUS_MAX)
                                return pbs_fail(ret_error, "select: invalid %s (0 to %u GPUs)", *p, CORRAL_GPUS_MAX);
                        have_gpus = true;
                } else if (strneq(*p, "gpu_model=", 10) || strneq(*p, "gpu_type=", 9)) {
                        if (isempty(eq + 1))
                                return pbs_fail(ret_error, "select: empty %.*s", (int) (eq - *p), *p);
                        type = eq + 1;
                } else
                        return pbs_fail(ret_error, "select: resource '%.*s' not supported", (int) (eq - *p), *p);
        }
        if (type && !have_gpus)
                return pbs_fail(ret_error, "select: a GPU type without ngpus=");
        if (have_gpus) {
                /* ngpus is per chunk, as ncpus. */
                r = pbs_set_gpus(o, type, chunks * ngpus, ret_error);
                if (r < 0)
                        return r;
        }
        if (ncpus > 0 || chunks > 1) {
                r = pbs_set_cpus(o, chunks * MAX(ncpus, (uint64_t) 1), ret_error);
                if (r < 0)
                        return r;
        }
        if (mem > 0) {
                if (__builtin_mul_overflow(mem, chunks, &mem))
                        return pbs_fail(ret_error, "select: memory too large");
                return pbs_set_bytes(o, mem, ret_error);
        }
        return 0;
}

/* "nodes=1:ppn=4:gpus=2": Torque's form. A bare name is a node property, which Torque
 * matches against the node's features: here, like -C, against the GPUs'. */
static int pbs_nodes(SubmitOptions *o, const char *spec, char **ret_error) {
        _cleanup_strv_free_ char **parts = NULL;
        _cleanup_free_ char *expr = NULL;
        uint64_t v;
        int r;

        r = strv_split(spec, ":", &parts);
        if (r < 0)
                return r;
        if (!parts[0] || !streq(parts[0], "1"))
                return pbs_fail(ret_error, "not supported on a single machine (only nodes=1 can be requested)");
        for (char **p = parts + 1; *p; p++) {
                if (strneq(*p, "gpus=", 5)) {
                        if (safe_atou64(*p + 5, &v) < 0)
                                return pbs_fail(ret_error, "invalid %s", *p);
                        r = pbs_set_gpus(o, NULL, v, ret_error);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!strneq(*p, "ppn=", 4)) {
                        if (strchr(*p, '=') || !constraint_is_valid(*p))
                                return pbs_fail(ret_error, "node property '%s' not supported", *p);
                        char *e;
                        if (asprintf(&e, "%s%s%s", strempty(expr), expr ? "&" : "", *p) < 0)
                                return -ENOMEM;
                        free(expr);
                        expr = e;
                        continue;
                }
                if (safe_atou64(*p + 4, &v) < 0)
                        return pbs_fail(ret_error, "invalid %s", *p);
                r = pbs_set_cpus(o, v, ret_error);
                if (r < 0)
                        return r;
        }
        /* Every property is wanted: Slurm's "a&b". */
        if (expr)
                return pbs_set(o, "constraint", expr, ret_error);
        return 0;
}

static int pbs_resource(SubmitOptions *o, const char *res, char **ret_error) {
        const char *eq = strchr(res, '='), *v;
        uint64_t n;

        if (!eq)
                return pbs_fail(ret_error, "expected RESOURCE=VALUE, got '%s'", res);
        v = eq + 1;
#define IS(name) ((size_t) (eq - res) == strlen(name) && strneq(res, name, strlen(name)))
        if (IS("nodes"))
                return pbs_nodes(o, v, ret_error);
        if (IS("select"))
                return pbs_select(o, v, ret_error);
        if (IS("ncpus")) {
                if (safe_atou64(v, &n) < 0)
                        return pbs_fail(ret_error, "invalid ncpus");
                return pbs_set_cpus(o, n, ret_error);
        }
        if (IS("ngpus")) {
                if (safe_atou64(v, &n) < 0)
                        return pbs_fail(ret_error, "invalid ngpus");
                return pbs_set_gpus(o, NULL, n, ret_error);
        }
        if (IS("mem")) {
                /* PBS sizes without a unit are bytes. */
                if (parse_size(v, 1, &n) < 0 || n == 0)
                        return pbs_fail(ret_error, "invalid mem (e.g. 4gb, 512mb)");
                return pbs_set_bytes(o, n, ret_error);
        }
        if (IS("walltime")) {
                char buf[32];
                if (parse_duration(v, DURATION_PBS, &n) < 0)
                        return pbs_fail(ret_error, "invalid walltime (HH:MM:SS)");
                if (n == DURATION_INFINITY)
                        n = 0;
                snprintf(buf, sizeof(buf), "%" PRIu64 "s", n);
                return pbs_set(o, "time", buf, ret_error);
        }
        if (IS("place")) {
                /* Placement among nodes means nothing on one machine; only excl does. */
                if (strstr(v, "excl"))
                        return pbs_set(o, "exclusive", NULL, ret_error);
                return 0;
        }
        if (IS("naccesspolicy")) {
                if (streq(v, "singlejob"))
                        return pbs_set(o, "exclusive", NULL, ret_error);
                return pbs_fail(ret_error, "naccesspolicy=%s not supported", v);
        }
#undef IS
        return pbs_fail(ret_error, "resource '%.*s' not supported", (int) (eq - res), res);
}

static int pbs_depend(SubmitOptions *o, const char *v, char **ret_error) {
        _cleanup_free_ char *copy = strdup(v);
        char *r, *w;

        if (!copy)
                return -ENOMEM;
        /* PBS job ids carry the server name ("123.pbs01"): keep the number. */
        for (r = w = copy; *r;) {
                if (*r == '.') {
                        while (*r && *r != ':' && *r != ',')
                                r++;
                        continue;
                }
                *w++ = *r++;
        }
        *w = 0;
        return pbs_set(o, "dependency", copy, ret_error);
}

/* The first of "NAME[@host][,NAME@host...]": there is one host. */
static char *pbs_first_of_list(const char *v) {
        return strndup(v, strcspn(v, ",@"));
}

static int pbs_attribute(SubmitOptions *o, const char *attr, char **ret_error) {
        if (strneq(attr, "depend=", 7))
                return pbs_depend(o, attr + 7, ret_error);
        if (strneq(attr, "group_list=", 11)) {
                /* The group the job is charged to: what a project is here. */
                _cleanup_free_ char *g = pbs_first_of_list(attr + 11);
                if (!g)
                        return -ENOMEM;
                return pbs_set(o, "project", g, ret_error);
        }
        if (streq(attr, "block=true"))
                return pbs_set(o, "wait", NULL, ret_error);
        if (streq(attr, "block=false"))
                return 0;
        return pbs_fail(ret_error, "attribute '%.*s' not supported", (int) strcspn(attr, "="), attr);
}

/* -o/-e "[host:]PATH": PATH a directory means qsub's default file name in it. Known from
 * a trailing '/' here; otherwise submit_options_resolve_output_dirs() looks. */
static int pbs_output(SubmitOptions *o, char opt, const char *arg, char **ret_error) {
        SubmitField field = opt == 'o' ? SUBMIT_FIELD_OUTPUT : SUBMIT_FIELD_ERROR;
        unsigned bit = opt == 'o' ? 1U : 2U;
        _cleanup_free_ char *path = NULL;
        const char *colon = strchr(arg, ':'), *p = arg;
        size_t l;
        int r;

        if (colon && colon > arg && colon[1] == '/' &&
            strspn(arg, "abcdefghijklmnopqrstuvwxyz"
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == (size_t) (colon - arg))
                p = colon + 1;
        l = strlen(p);
        if (l > 0 && p[l - 1] == '/' && asprintf(&path, "%s%%x.%c%%j", p, opt) < 0)
                return -ENOMEM;
        r = pbs_set(o, opt == 'o' ? "output" : "error", path ?: p, ret_error);
        if (r < 0 || o->set_by_command_line[field])
                return r;
        if (path)
                o->output_may_be_dir &= ~bit;
        else
                o->output_may_be_dir |= bit;
        return 0;
}

/* -S "PATH[@host][,PATH@host...]": the interpreter qsub runs the script with. */
static int pbs_shell(SubmitOptions *o, const char *arg, char **ret_error) {
        _cleanup_free_ char *sh = pbs_first_of_list(arg);

        if (!sh)
                return -ENOMEM;
        if (sh[0] != '/' || strlen(sh) > CORRAL_PATH_LENGTH_MAX || strpbrk(sh, " \t\r\n"))
                return pbs_fail(ret_error, "expected the absolute path of a shell, e.g. /bin/bash");
        free(o->shell);
        o->shell = TAKE_PTR(sh);
        return 0;
}

/* -m: a(bort), b(egin), e(nd), f(ail, Torque), j (subjobs, PBS Pro) or n(one). */
static int pbs_mail_events(SubmitOptions *o, const char *arg, char **ret_error) {
        static const struct {
                char c;
                const char *type;
        } map[] = { { 'a', "FAIL" }, { 'f', "FAIL" }, { 'b', "BEGIN" }, { 'e', "END" }, { 'j', "ARRAY_TASKS" } };
        char types[128] = "";

        if (streq(arg, "n"))
                return pbs_set(o, "mail-type", "NONE", ret_error);
        if (isempty(arg))
                return pbs_fail(ret_error, "expected a combination of a, b, e, or n");
        for (const char *p = arg; *p; p++) {
                size_t i;

                for (i = 0; i < ELEMENTSOF(map); i++)
                        if (map[i].c == *p)
                                break;
                if (i >= ELEMENTSOF(map))
                        return pbs_fail(ret_error, "expected a combination of a, b, e, or n");
                if (strlen(types) + strlen(map[i].type) + 2 < sizeof(types)) {
                        if (types[0])
                                strcat(types, ",");
                        strcat(types, map[i].type);
                }
        }
        return pbs_set(o, "mail-type", types, ret_error);
}

static int pbs_option(SubmitOptions *o, char opt, const char *arg, char **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        switch (opt) {
        case 'N':
                return pbs_set(o, "name", arg, ret_error);
        case 'o':
        case 'e':
                return pbs_output(o, opt, arg, ret_error);
        case 'S':
                return pbs_shell(o, arg, ret_error);
        case 'k':
                /* Keep the output on the execution host: it is always this machine. */
                if (isempty(arg) || strspn(arg, "eodn") != strlen(arg) || (strchr(arg, 'n') && arg[1]))
                        return pbs_fail(ret_error, "expected e, o, eo, oe, d or n");
                return 0;
        case 'm':
                return pbs_mail_events(o, arg, ret_error);
        case 'M':
                return pbs_set(o, "mail-user", arg, ret_error);
        case 'q':
                return pbs_set(o, "queue", arg, ret_error);
        case 'A':
        case 'P':
                return pbs_set(o, "project", arg, ret_error);
        case 'J':
        case 't':
                /* PBS Pro's -J, Torque's -t. */
                return pbs_set(o, "array", arg, ret_error);
        case 'h':
                return pbs_set(o, "hold", NULL, ret_error);
        case 'd':
        case 'w':
                return pbs_set(o, "workdir", arg, ret_error);
        case 'n':
                return pbs_set(o, "exclusive", NULL, ret_error);
        case 'r':
                if (streq(arg, "y"))
                        return pbs_set(o, "rerunnable", NULL, ret_error);
                if (streq(arg, "n"))
                        return pbs_set(o, "no-rerunnable", NULL, ret_error);
                return pbs_fail(ret_error, "expected y or n");
        case 'j':
                if (o->set_by_command_line[SUBMIT_FIELD_JOIN])
                        return 0;
                if (streq(arg, "oe"))
                        o->join = SUBMIT_JOIN_OUTPUT;
                else if (streq(arg, "eo"))
                        o->join = SUBMIT_JOIN_ERROR;
                else if (streq(arg, "n"))
                        o->join = SUBMIT_JOIN_NONE;
                else
                        return pbs_fail(ret_error, "expected oe, eo or n");
                return 0;
        case 'V':
                if (o->set_by_command_line[SUBMIT_FIELD_EXPORT])
                        return 0;
                o->export_all = 1;
                return 0;
        case 'v':
                /* Adds to what is exported, unlike sbatch's --export which replaces. */
                if (o->set_by_command_line[SUBMIT_FIELD_EXPORT])
                        return 0;
                r = strv_split(arg, ",", &l);
                if (r < 0)
                        return r;
                STRV_FOREACH(v, l) {
                        const char *eq = strchr(*v, '=');
                        if (eq ? !env_assignment_is_valid(*v) : !env_name_is_valid(*v, strlen(*v)))
                                return pbs_fail(ret_error, "'%s' is neither a variable name nor NAME=VALUE", *v);
                        r = strv_extend(&o->export_vars, *v);
                        if (r < 0)
                                return r;
                }
                return 0;
        case 'l': {
                _cleanup_free_ char *all = NULL;

                /* Every bad resource of the list, not only the first. */
                r = strv_split(arg, ",", &l);
                if (r < 0)
                        return r;
                STRV_FOREACH(res, l) {
                        _cleanup_free_ char *reason = NULL;
                        char *joined;

                        r = pbs_resource(o, *res, &reason);
                        if (r != -EINVAL) {
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (asprintf(&joined, "%s%s%s", strempty(all), all ? "; " : "", strna(reason)) < 0)
                                return -ENOMEM;
                        free(all);
                        all = joined;
                }
                if (all) {
                        *ret_error = TAKE_PTR(all);
                        return -EINVAL;
                }
                return 0;
        }
        case 'W':
                return pbs_attribute(o, arg, ret_error);
        default:
                return pbs_fail(ret_error, "option not supported");
        }
}

/* Options of qsub, and whether they take a value; the ones handled above plus those we
 * know only to refuse. */
static int pbs_takes_arg(char c) {
        if (strchr("NoeqAPJtdwrjvlWmMpSackuCT", c))
                return 1;
        if (strchr("hVnIXzf", c))
                return 0;
        return -1;
}

/* Every option of the line; each error, "<option as written>: <reason>", goes to
 * *ret_errors, and each warning gets the option in front. */
static int pbs_parse_words(SubmitOptions *o, char **words, char ***ret_errors) {
        bool failed = false;

        for (char **w = words; *w; w++) {
                const char *a = *w, *arg = NULL;
                _cleanup_free_ char *written = NULL, *reason = NULL;
                char *error = NULL;
                size_t n_warnings = strv_length(o->warnings);
                int t, r;

                if (a[0] != '-' || !a[1])
                        r = pbs_fail(&error, "%s: unexpected argument", a);
                else if ((t = pbs_takes_arg(a[1])) < 0)
                        r = pbs_fail(&error, "%s: unknown option", a);
                else if (t > 0 && !a[2] && !w[1])
                        r = pbs_fail(&error, "%s: option requires a value", a);
                else if (t == 0 && a[2])
                        r = pbs_fail(&error, "%s: option takes no value", a);
                else {
                        if (t > 0)
                                arg = a[2] ? a + 2 : *++w;
                        if (arg && arg != a + 2 && asprintf(&written, "%s %s", a, arg) < 0)
                                return -ENOMEM;
                        r = pbs_option(o, a[1], arg, &reason);
                        if (r == -EINVAL)
                                r = pbs_fail(&error, "%s: %s", written ?: a, reason ?: "invalid value");
                        for (size_t i = n_warnings; r >= 0 && o->warnings && o->warnings[i]; i++) {
                                char *m;

                                if (asprintf(&m, "%s: %s", written ?: a, o->warnings[i]) < 0)
                                        return -ENOMEM;
                                free(o->warnings[i]);
                                o->warnings[i] = m;
                        }
                }
                r = directive_keep_error(r, error, ret_errors, &failed);
                if (r < 0)
                        return r;
        }
        return failed ? -EINVAL : 0;
}

/* ---- Scripts ---- */

typedef enum Dialect {
        DIALECT_CORRAL,
        DIALECT_SBATCH,
        DIALECT_PBS,
        _DIALECT_MAX,
} Dialect;

static const char *const prefixes[_DIALECT_MAX] = {
        [DIALECT_CORRAL] = "#CORRAL",
        [DIALECT_SBATCH] = "#SBATCH",
        [DIALECT_PBS] = "#PBS",
};

static int directive_dialect(const char *line, size_t len, size_t *ret_skip) {
        for (int d = 0; d < _DIALECT_MAX; d++) {
                size_t l = strlen(prefixes[d]);
                /* "#SBATCH" must be followed by whitespace or end the line: "#SBATCHX" and
                 * "##SBATCH" are comments. */
                if (len >= l && strneq(line, prefixes[d], l) && (len == l || isspace((unsigned char) line[l]))) {
                        *ret_skip = l;
                        return d;
                }
        }
        return -1;
}

/* Error or warning number at of errs moved to position to. */
static void errors_move(DirectiveErrors *errs, size_t at, size_t to) {
        DirectiveError e = errs->items[at];

        memmove(errs->items + to + 1, errs->items + to, (at - to) * sizeof(DirectiveError));
        errs->items[to] = e;
}

int directives_parse(const char *script_text, const char *script_name, SubmitOptions *o, DirectiveErrors *errs) {
        const char *p = script_text, *name = script_name ?: "script";
        bool header = true, failed = false, pbs = false;
        size_t first_error = errs->n;
        unsigned line = 0;
        int r;

        assert(script_text);
        assert(o);
        assert(errs);

        while (*p) {
                size_t len = strcspn(p, "\n"), shown = len, skip, n_warnings;
                const char *next = p[len] ? p + len + 1 : p + len;
                _cleanup_strv_free_ char **words = NULL, **errors = NULL;
                int d;

                line++;
                if (shown > 0 && p[shown - 1] == '\r')
                        shown--;

                d = directive_dialect(p, shown, &skip);
                if (d < 0) {
                        size_t i = 0;
                        while (i < shown && isspace((unsigned char) p[i]))
                                i++;
                        if (i < shown && p[i] != '#')
                                header = false;
                        p = next;
                        continue;
                }

                if (!header) {
                        r = add_error(errs, name, line, true,
                                      "%.*s: ignored, directives after the first command are not read",
                                      (int) shown, p);
                        if (r < 0)
                                return r;
                        p = next;
                        continue;
                }
                if (d == DIALECT_PBS)
                        pbs = true;

                n_warnings = strv_length(o->warnings);
                r = split_words(p + skip, shown - skip, &words);
                if (r == -EINVAL) {
                        failed = true;
                        r = add_error(errs, name, line, false, "%.*s: unterminated quote", (int) shown, p);
                } else if (r >= 0) {
                        if (d == DIALECT_PBS)
                                r = pbs_parse_words(o, words, &errors);
                        else
                                r = submit_options_parse_directive(o, words, strv_length(words),
                                                                   d == DIALECT_SBATCH, &errors);
                        if (r == -EINVAL) {
                                failed = true;
                                r = 0;
                                STRV_FOREACH(e, errors)
                                        if ((r = add_error(errs, name, line, false, "%s %s", prefixes[d], *e)) < 0)
                                                break;
                        }
                }
                if (r < 0)
                        return r;
                /* What the line's options accepted without honouring, with its line. */
                for (size_t i = n_warnings; o->warnings && o->warnings[i]; i++) {
                        r = add_error(errs, name, line, true, "%s %s", prefixes[d], o->warnings[i]);
                        if (r < 0)
                                return r;
                        o->warnings[i] = mfree(o->warnings[i]);
                }
                p = next;
        }

        /* sbatch runs a script by its #! line and refuses one without; qsub needs none
         * (its -S, else the login shell). Reported first, with the directives' errors. */
        if (!strneq(script_text, "#!", 2)) {
                if (pbs)
                        o->script_wants_shell = true;
                else {
                        r = add_error(errs, name, 1, false, "not a batch script: the first line must start with #! and "
                                      "an interpreter, e.g. #!/bin/bash");
                        if (r < 0)
                                return r;
                        errors_move(errs, errs->n - 1, first_error);
                        failed = true;
                }
        }

        return failed ? -EINVAL : 0;
}
