/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swf.h"

#define SWF_FIELDS 18

_printf_(2, 3)
static void set_error(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (!ret_error)
                return;
        free(*ret_error);
        *ret_error = NULL;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
}

/* "; Key: 123" headers; anything else in a comment is ignored. */
static void parse_header(const char *line, SwfTrace *t) {
        static const struct {
                const char *key;
                size_t offset;
        } keys[] = {
                { "MaxProcs:", offsetof(SwfTrace, max_procs) },
                { "MaxNodes:", offsetof(SwfTrace, max_nodes) },
        };
        const char *p = line + 1;

        while (*p == ' ' || *p == '\t')
                p++;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                size_t l = strlen(keys[i].key);
                char *end;
                long long v;

                if (strncmp(p, keys[i].key, l) != 0)
                        continue;
                errno = 0;
                v = strtoll(p + l, &end, 10);
                if (errno == 0 && end != p + l && v > 0)
                        *(int64_t *) ((char *) t + keys[i].offset) = v;
        }
}

/* 18 fields, or 19 with Corral's GPUs (f[18] is -1 without). */
static int parse_line(char *line, int64_t f[SWF_FIELDS + 1]) {
        char *p = line;
        size_t n = 0;

        for (;;) {
                char *end;
                double v;

                while (isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                if (n >= SWF_FIELDS + 1)
                        return -E2BIG;
                errno = 0;
                v = strtod(p, &end);
                if (end == p || errno != 0 || !isfinite(v) || (*end && !isspace((unsigned char) *end)))
                        return -EINVAL;
                if (v > 9.2e18 || v < -9.2e18)
                        return -ERANGE;
                f[n++] = llround(v);
                p = end;
        }
        if (n == SWF_FIELDS)
                f[SWF_FIELDS] = -1;
        return n >= SWF_FIELDS ? 0 : -ENODATA;
}

int swf_parse(FILE *f, const char *name, SwfTrace *ret, char **ret_error) {
        SwfTrace t = { .max_procs = -1, .max_nodes = -1 };
        size_t n_alloc = 0, size = 0;
        _cleanup_free_ char *line = NULL;
        unsigned lineno = 0;
        ssize_t l;

        while ((l = getline(&line, &size, f)) >= 0) {
                int64_t v[SWF_FIELDS + 1];
                const char *p = line;
                int r;

                lineno++;
                /* The fields are parsed as a C string: a NUL would hide the rest of the line. */
                if (memchr(line, 0, (size_t) l)) {
                        set_error(ret_error, "%s:%u: NUL byte in the line", name, lineno);
                        free(t.jobs);
                        return -EINVAL;
                }
                while (isspace((unsigned char) *p))
                        p++;
                if (*p == ';') {
                        parse_header(p, &t);
                        continue;
                }
                if (!*p)
                        continue;

                r = parse_line(line, v);
                if (r < 0) {
                        set_error(ret_error, "%s:%u: %s", name, lineno,
                                  r == -ENODATA ? "fewer than 18 fields" :
                                  r == -E2BIG ? "more than 19 fields" :
                                  r == -ERANGE ? "number out of range" : "field is not a number");
                        free(t.jobs);
                        return -EINVAL;
                }
                if (!GREEDY_REALLOC(t.jobs, n_alloc, t.n_jobs + 1)) {
                        free(t.jobs);
                        return -ENOMEM;
                }
                t.jobs[t.n_jobs++] = (SwfJob) {
                        .id = v[0],
                        .submit = v[1],
                        .wait = v[2],
                        .run = v[3],
                        .procs_alloc = v[4],
                        .procs_req = v[7],
                        .time_req = v[8],
                        .user = v[11],
                        .group = v[12],
                        .queue = v[14],
                        .gpus = v[18],
                        .line = lineno,
                };
        }
        if (ferror(f)) {
                int r = errno > 0 ? -errno : -EIO;
                set_error(ret_error, "%s:%u: read error: %s", name, lineno, strerror(-r));
                free(t.jobs);
                return r;
        }

        *ret = t;
        return 0;
}

int swf_load(const char *path, SwfTrace *ret, char **ret_error) {
        FILE *f;
        int r;

        f = fopen(path, "re");
        if (!f) {
                r = errno > 0 ? -errno : -EIO;
                set_error(ret_error, "%s: %s", path, strerror(-r));
                return r;
        }
        r = swf_parse(f, path, ret, ret_error);
        fclose(f);
        return r;
}

void swf_trace_done(SwfTrace *t) {
        if (!t)
                return;
        t->jobs = mfree(t->jobs);
        t->n_jobs = 0;
}
