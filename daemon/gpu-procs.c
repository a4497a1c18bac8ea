/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fd-util.h"
#include "gpu-procs.h"
#include "parse-util.h"

#define JOB_SCOPE_PREFIX "corral-job-"
#define JOB_SCOPE_SUFFIX ".scope"

uint64_t gpu_cgroup_job_id(const char *path) {
        /* Each component in turn: a job's own sub-cgroups are below its scope. */
        for (const char *p = path; p && *p;) {
                const char *end = strchrnul(p, '/');
                size_t len = (size_t) (end - p);
                size_t pre = strlen(JOB_SCOPE_PREFIX), suf = strlen(JOB_SCOPE_SUFFIX);

                if (len > pre + suf && strneq(p, JOB_SCOPE_PREFIX, pre) &&
                    strneq(end - suf, JOB_SCOPE_SUFFIX, suf)) {
                        char digits[21];
                        size_t n = len - pre - suf;
                        uint64_t id;

                        if (n < sizeof digits) {
                                memcpy(digits, p + pre, n);
                                digits[n] = '\0';
                                if (strspn(digits, "0123456789") == n && digits[0] != '0' &&
                                    safe_atou64(digits, &id) >= 0 && id > 0)
                                        return id;
                        }
                }
                p = *end ? end + 1 : end;
        }
        return 0;
}

/* The cgroup v2 path of pid, from the "0::" line of <proc>/PID/cgroup (cgroup/cgroup-pid.c
 * reads it the same way; daemon/ does not use cgroup/). */
static int cgroup_of(int proc_fd, uint32_t pid, char **ret) {
        _cleanup_free_ char *buf = NULL;
        char fn[32];
        int r;

        (void) snprintf(fn, sizeof fn, "%" PRIu32 "/cgroup", pid);
        r = read_file_at(proc_fd, fn, 64 * 1024, &buf, NULL);
        if (r < 0)
                return r;
        for (char *p = buf; *p;) {
                char *e = strchrnul(p, '\n');

                if (strneq(p, "0::/", 4)) {
                        *ret = strndup(p + 3, (size_t) (e - p - 3));
                        return *ret ? 0 : -ENOMEM;
                }
                p = *e ? e + 1 : e;
        }
        return -ENODATA;
}

void gpu_samples_owners(int proc_fd, NvmlGpuSample *samples, size_t n) {
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < samples[i].n_processes; k++) {
                        NvmlProcess *p = &samples[i].processes[k];
                        _cleanup_free_ char *path = NULL;
                        char name[16];
                        struct stat st;

                        p->owner_known = false;
                        p->job_id = 0;
                        if (p->pid == 0)
                                continue;
                        (void) snprintf(name, sizeof name, "%" PRIu32, p->pid);
                        if (fstatat(proc_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                            cgroup_of(proc_fd, p->pid, &path) < 0)
                                continue;
                        /* A zombie whose cgroup was removed: the kernel's suffix. */
                        size_t len = strlen(path), del = strlen(" (deleted)");
                        if (len > del && streq(path + len - del, " (deleted)"))
                                path[len - del] = '\0';
                        p->uid = st.st_uid;
                        p->job_id = gpu_cgroup_job_id(path);
                        p->owner_known = true;
                }
}
