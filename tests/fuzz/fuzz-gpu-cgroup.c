/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The job of a process's cgroup path as the GPU telemetry reads it (daemon/gpu-procs.c):
 * any text in, and a job id only where the path has its corral-job-N.scope component. */

#include <inttypes.h>

#include "fuzz.h"
#include "gpu-procs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_strndup(data, size), want[48];
        uint64_t id = gpu_cgroup_job_id(s);

        if (id > 0) {
                const char *p;
                size_t len;

                snprintf(want, sizeof want, "corral-job-%" PRIu64 ".scope", id);
                len = strlen(want);
                p = strstr(s, want);
                fuzz_check(p);
                /* A whole component: at the start or after a '/', ending at a '/' or the end. */
                while (p && !((p == s || p[-1] == '/') && (p[len] == '/' || p[len] == '\0')))
                        p = strstr(p + 1, want);
                fuzz_check(p);
        }
        free(s);
        return 0;
}
