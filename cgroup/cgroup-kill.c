/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroup-kill.h"
#include "cgroup-util.h"
#include "errno-util.h"
#include "fd-util.h"
#include "parse-util.h"

/* Enough for any fork loop that is not actively racing us; the caller escalates anyway. */
#define KILL_PASSES_MAX 16

int cg_kill(int root_fd, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = cg_open(root_fd, path);
        if (fd < 0)
                return fd;
        r = write_string_file_at(fd, "cgroup.kill", "1");
        return r == -ENOENT ? -EOPNOTSUPP : r;
}

typedef struct PidSet {
        pid_t *pids;
        size_t n, allocated;
} PidSet;

static bool pid_set_contains(const PidSet *s, pid_t pid) {
        for (size_t i = 0; i < s->n; i++)
                if (s->pids[i] == pid)
                        return true;
        return false;
}

static int kill_procs(int cg_fd, int sig, PidSet *done, unsigned *n_new) {
        _cleanup_free_ char *procs = NULL;
        char *p, *save = NULL;
        int r, ret = 0;

        r = cg_read_attr(cg_fd, "cgroup.procs", &procs);
        if (r == -ENOENT)
                return 0; /* removed meanwhile */
        if (r < 0)
                return r;

        for (p = strtok_r(procs, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
                unsigned v;
                pid_t pid;

                if (safe_atou(p, &v) < 0 || v == 0 || v > INT32_MAX)
                        return -EBADMSG;
                pid = (pid_t) v;
                if (pid_set_contains(done, pid))
                        continue;
                if (!GREEDY_REALLOC(done->pids, done->allocated, done->n + 1))
                        return -ENOMEM;
                done->pids[done->n++] = pid;
                (*n_new)++;

                if (kill(pid, sig) < 0 && errno != ESRCH && ret == 0)
                        ret = negative_errno(); /* keep going: kill what we can */
        }
        return ret;
}

/* Takes ownership of cg_fd. */
static int kill_tree(int cg_fd, int sig, PidSet *done, unsigned *n_new) {
        _cleanup_close_ int fd = cg_fd;
        _cleanup_closedir_ DIR *d = NULL;
        int r, ret;

        ret = kill_procs(fd, sig, done, n_new);

        d = fdopendir(fd);
        if (!d)
                return ret < 0 ? ret : negative_errno();
        fd = -EBADF; /* now owned by d */

        for (struct dirent *de; (errno = 0, de = readdir(d)); ) {
                int child;

                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                child = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0) {
                        if (errno == ENOENT || errno == ENOTDIR)
                                continue;
                        r = negative_errno();
                } else
                        r = kill_tree(child, sig, done, n_new);
                if (r < 0 && ret >= 0)
                        ret = r;
        }
        if (errno != 0 && ret >= 0)
                ret = negative_errno();
        return ret;
}

int cg_kill_fallback(int root_fd, const char *path, int sig) {
        PidSet done = {};
        size_t n;
        int r = 0;

        for (unsigned pass = 0; pass < KILL_PASSES_MAX; pass++) {
                unsigned n_new = 0;
                int fd;

                fd = cg_open(root_fd, path);
                if (fd < 0) {
                        r = fd;
                        break;
                }
                r = kill_tree(fd, sig, &done, &n_new);
                if (r < 0 || n_new == 0)
                        break;
        }
        n = done.n;
        free(done.pids);
        if (r < 0)
                return r;
        return (int) MIN(n, (size_t) INT32_MAX);
}
