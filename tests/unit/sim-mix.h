/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What the simulation tests share: a synthetic mix of jobs, made here so the tests need
 * no trace, and a configuration written to a temporary directory and read with the
 * daemon's parsers. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim.h"
#include "swf.h"

#define MIX_PROCS 64
#define MIX_QUEUE_EXPRESS 1  /* SWF field 15 */
#define MIX_QUEUE_NORMAL 2
#define MIX_HEAVY 1          /* SWF fields 12 and 13: user and group */
#define MIX_LIGHT 2

typedef struct MixStream {
        int64_t user_group, queue;
        unsigned procs;
        int64_t run_min, run_max;     /* uniform */
        int64_t gap_min, gap_max;     /* between submissions, uniform */
        double request_factor;        /* requested time = run × this */
} MixStream;

/* Reproducible everywhere: not rand(). */
static inline uint64_t mix_random(uint64_t *s) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

static inline int64_t mix_uniform(uint64_t *s, int64_t lo, int64_t hi) {
        return lo + (int64_t) (mix_random(s) % (uint64_t) (hi - lo + 1));
}

typedef struct MixLine {
        int64_t submit, run, request;
        unsigned procs;
        int64_t user_group, queue;
} MixLine;

static inline int mix_line_cmp(const void *a, const void *b) {
        const MixLine *x = a, *y = b;
        return x->submit != y->submit ? (x->submit < y->submit ? -1 : 1) : (x->queue > y->queue) - (x->queue < y->queue);
}

/* The streams' jobs over [0, span), as an SWF trace of MIX_PROCS processors. */
static inline int mix_make(const MixStream *streams, size_t n_streams, int64_t span, uint64_t seed, SwfTrace *ret) {
        MixLine *lines = NULL;
        size_t n = 0, alloc = 0;
        char *text = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        for (size_t k = 0; k < n_streams; k++) {
                const MixStream *m = &streams[k];
                uint64_t s = seed * 2654435761u + k + 1;

                for (int64_t t = 0; t < span; t += mix_uniform(&s, m->gap_min, m->gap_max)) {
                        int64_t run = mix_uniform(&s, m->run_min, m->run_max);
                        if (n == alloc) {
                                MixLine *l = realloc(lines, (alloc = alloc * 2 + 64) * sizeof *l);
                                if (!l) {
                                        free(lines);
                                        return -ENOMEM;
                                }
                                lines = l;
                        }
                        lines[n++] = (MixLine) { t, run, (int64_t) ((double) run * m->request_factor), m->procs,
                                                 m->user_group, m->queue };
                }
        }
        qsort(lines, n, sizeof *lines, mix_line_cmp);
        f = open_memstream(&text, &size);
        if (!f) {
                free(lines);
                return -errno;
        }
        fprintf(f, "; MaxProcs: %d\n", MIX_PROCS);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%zu %lld -1 %lld %u -1 -1 %u %lld -1 1 %lld %lld -1 %lld -1 -1 -1\n", i + 1,
                        (long long) lines[i].submit, (long long) lines[i].run, lines[i].procs, lines[i].procs,
                        (long long) lines[i].request, (long long) lines[i].user_group,
                        (long long) lines[i].user_group, (long long) lines[i].queue);
        fclose(f);
        free(lines);
        f = fmemopen(text, size, "r");
        if (!f) {
                free(text);
                return -errno;
        }
        r = swf_parse(f, "mix.swf", ret, NULL);
        fclose(f);
        free(text);
        return r;
}

/* dir/corral.conf with conf, and dir/projects.d/NAME.conf for each NAME, TEXT pair. */
static inline int mix_config(const char *conf, const char *const *projects, Config **ret, char **ret_error) {
        char dir[] = "/tmp/test-sim-XXXXXX", path[256], pdir[128];
        FILE *f;
        int r;

        if (!mkdtemp(dir))
                return -errno;
        snprintf(path, sizeof path, "%s/corral.conf", dir);
        snprintf(pdir, sizeof pdir, "%s/projects.d", dir);
        if (mkdir(pdir, 0700) < 0)
                return -errno;
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fputs(conf, f);
        fclose(f);
        for (size_t i = 0; projects && projects[i]; i += 2) {
                char p[256];
                snprintf(p, sizeof p, "%s/%s.conf", pdir, projects[i]);
                f = fopen(p, "we");
                if (!f)
                        return -errno;
                fputs(projects[i + 1], f);
                fclose(f);
        }
        r = config_load_paths(path, NULL, pdir, ret, ret_error);
        for (size_t i = 0; projects && projects[i]; i += 2) {
                char p[256];
                snprintf(p, sizeof p, "%s/%s.conf", pdir, projects[i]);
                (void) unlink(p);
        }
        (void) rmdir(pdir);
        (void) unlink(path);
        (void) rmdir(dir);
        return r;
}

static inline const SimGroupStats *mix_group(const SimGroupStats *g, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (streq(g[i].name, name))
                        return &g[i];
        return NULL;
}

static const SimMap mix_queue_map[] = {
        { MIX_QUEUE_EXPRESS, (char *) "express" },
        { MIX_QUEUE_NORMAL, (char *) "normal" },
};
static const SimMap mix_project_map[] = {
        { MIX_HEAVY, (char *) "heavy" },
        { MIX_LIGHT, (char *) "light" },
};

static inline bool mix_strict(void) {
        const char *e = getenv("CORRAL_TEST_STRICT");
        return e && streq(e, "1");
}
