/* SPDX-License-Identifier: GPL-2.0-or-later */
/* job_expand_path(): corrald expands the user's output path patterns with the user's job
 * name, as root. Input, one per line: the job name (up to 255 bytes), the user name (up to
 * 64), "ID ARRAY_JOB_ID ARRAY_TASK_ID", then the pattern (the rest). The result is
 * compared with a straightforward expansion into a growing buffer: equal when that fits in
 * PATH_MAX - 1 bytes, -ENAMETOOLONG when it does not. */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>

#include "daemon/job.h"
#include "fuzz.h"
#include "intern.h"
#include "protocol.h"

static const char *next_line(const char **p, const char *end, size_t *ret_len) {
        const char *s = *p, *nl = memchr(s, '\n', (size_t) (end - s));

        *ret_len = (size_t) ((nl ?: end) - s);
        *p = nl ? nl + 1 : end;
        return s;
}

/* The reference, with no bound of its own. */
static void reference(const Job *j, const char *pattern, FILE *out) {
        for (const char *p = pattern; *p; p++) {
                if (*p != '%' || !p[1]) {
                        fputc(*p, out);
                        continue;
                }
                switch (*++p) {
                case 'j': fprintf(out, "%" PRIu64, j->id); break;
                case 'x': fputs(strempty(job_str(j, JOB_NAME)), out); break;
                case 'u': fputs(strempty(job_user(j)), out); break;
                case 'A': fprintf(out, "%" PRIu64, j->array_job_id ?: j->id); break;
                case 'a': fprintf(out, "%" PRIu32, j->array_task_id); break;
                case '%': fputc('%', out); break;
                default: fputc('%', out); fputc(*p, out); break;
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = fuzz_strndup(data, size), *want = NULL, *got = NULL, *name = NULL;
        const char *p = text, *end = text + strlen(text), *s;
        char user[3], ids[64];
        unsigned long long id = 0, array_job_id = 0, array_task_id = 0;
        size_t n, want_len = 0;
        Job *j;
        FILE *f;
        int r;

        j = job_new();
        fuzz_check(j);

        s = next_line(&p, end, &n);
        name = strndup(s, MIN(n, (size_t) CORRAL_NAME_LENGTH_MAX));
        fuzz_check(name);
        {
                SubmitRequest req = SUBMIT_REQUEST_INIT; /* borrows name: not freed */
                req.name = name;
                fuzz_check(job_set_request(j, &req) >= 0);
        }
        /* Interned, as a job's user is; two bytes at most, so that the names every input
         * leaves for the life of the process stay few (65,536, any byte but NUL and
         * newline: '%' included). */
        s = next_line(&p, end, &n);
        memcpy(user, s, MIN(n, (size_t) 2));
        user[MIN(n, (size_t) 2)] = 0;
        j->user = intern_id(user);
        fuzz_check(!user[0] || j->user != 0);
        s = next_line(&p, end, &n);
        memcpy(ids, s, MIN(n, sizeof ids - 1));
        ids[MIN(n, sizeof ids - 1)] = 0;
        (void) sscanf(ids, "%llu %llu %llu", &id, &array_job_id, &array_task_id);
        j->id = id;
        j->array_job_id = array_job_id;
        j->array_task_id = (uint32_t) array_task_id;

        f = open_memstream(&want, &want_len);
        fuzz_check(f);
        reference(j, p, f);
        fuzz_check(fclose(f) == 0);

        r = job_expand_path(j, p, &got);
        if (want_len <= PATH_MAX - 1) {
                if (r != 0)
                        fprintf(stderr, "job_expand_path: %d for %zu bytes\n", r, want_len);
                fuzz_check(r == 0 && got);
                fuzz_check(strlen(got) == want_len && memcmp(got, want, want_len) == 0);
        } else
                fuzz_check(r == -ENAMETOOLONG);

        free(got);
        got = (char *) 0x1;
        fuzz_check(job_expand_path(j, NULL, &got) == 0 && !got);
        job_free(j);
        return 0;
}
